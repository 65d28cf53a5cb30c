//! The first request's body on a connection set aside, skipped by its framing (RFC 9112 §6.3,
//! §7.1): a body holds no request, so its bytes need neither a search for signs nor a place in
//! the window (an upload's are most of its connection's bytes). What follows the body is the
//! next request, searched as usual. Framing that does not read as it should ends the skipping:
//! everything after is searched, which costs time, never a sign.

/// Where the skipping is in the first request's body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Skip {
    /// Nothing (more) to skip.
    Done,
    /// Bytes of a `Content-Length` body still to come.
    Length(u64),
    /// A chunked body: reading a chunk-size line (its value so far; `ext`: past a `;`).
    Size {
        value: u64,
        ext: bool,
    },
    /// Bytes of chunk data still to come, then the line end after them.
    Data(u64),
    DataEnd,
    /// After the last chunk: trailer lines until an empty one (`empty`: nothing on this line
    /// yet but a CR).
    Trailers {
        empty: bool,
    },
}

/// Of `left` bytes still to come, those of `have` bytes that are theirs, and how many are left
/// after them (none: they all came).
fn count_down(left: u64, have: usize) -> (usize, Option<u64>) {
    let n = left.min(have as u64);
    (n as usize, (n < left).then(|| left - n))
}

/// Chunk sizes past this are not believed: the skipping ends.
const MAX_CHUNK: u64 = 1 << 40;

impl Skip {
    /// A chunked body from its first byte.
    pub(super) fn chunked() -> Skip {
        Skip::Size {
            value: 0,
            ext: false,
        }
    }

    /// How many of `data`'s first bytes belong to the body.
    pub(super) fn skip(&mut self, data: &[u8]) -> usize {
        let mut at = 0;
        while at < data.len() {
            at += match *self {
                Skip::Done => return at,
                Skip::Length(left) => {
                    let (n, rest) = count_down(left, data.len() - at);
                    *self = rest.map_or(Skip::Done, Skip::Length);
                    n
                }
                Skip::Data(left) => {
                    let (n, rest) = count_down(left, data.len() - at);
                    *self = rest.map_or(Skip::DataEnd, Skip::Data);
                    n
                }
                _ => {
                    self.line_byte(data[at]);
                    1
                }
            };
        }
        at
    }

    /// `len` bytes were lost from the capture here: a known length goes on past them; a
    /// position inside chunk framing is lost with them, and the skipping ends.
    pub(super) fn gap(&mut self, len: u64) {
        *self = match *self {
            Skip::Length(left) if left > len => Skip::Length(left - len),
            Skip::Data(left) if left > len => Skip::Data(left - len),
            _ => Skip::Done,
        };
    }

    /// One byte of a chunk-size line, the line end after chunk data, or a trailer line.
    fn line_byte(&mut self, b: u8) {
        *self = match (*self, b) {
            (Skip::Size { value: 0, .. }, b'\n') => Skip::Trailers { empty: true },
            (Skip::Size { value, .. }, b'\n') => Skip::Data(value),
            (Skip::Size { value, ext: false }, b) if b.is_ascii_hexdigit() => {
                let digit = u64::from((b as char).to_digit(16).unwrap_or(0));
                match value.checked_mul(16).map(|v| v + digit) {
                    Some(v) if v <= MAX_CHUNK => Skip::Size {
                        value: v,
                        ext: false,
                    },
                    _ => Skip::Done,
                }
            }
            (Skip::Size { value, .. }, b';' | b' ' | b'\t') => Skip::Size { value, ext: true },
            (s @ Skip::Size { ext: true, .. }, _) | (s @ Skip::Size { .. }, b'\r') => s,
            (Skip::DataEnd, b'\n') => Skip::chunked(),
            (Skip::DataEnd, b'\r') => Skip::DataEnd,
            (Skip::Trailers { empty: true }, b'\n') => Skip::Done,
            (Skip::Trailers { empty }, b'\r') => Skip::Trailers { empty },
            (Skip::Trailers { .. }, b'\n') => Skip::Trailers { empty: true },
            (Skip::Trailers { .. }, _) => Skip::Trailers { empty: false },
            // A size line that is not one, or bytes where a line end should be.
            _ => Skip::Done,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is left of `wire` after the body, fed in pieces of `piece` bytes.
    fn after_body(mut skip: Skip, wire: &[u8], piece: usize) -> Vec<u8> {
        let mut rest = Vec::new();
        for chunk in wire.chunks(piece) {
            let n = skip.skip(chunk);
            rest.extend_from_slice(&chunk[n..]);
        }
        rest
    }

    #[test]
    fn skips_a_chunked_body_whatever_the_pieces() {
        let wire = b"5;name=v\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\nPOST /mcp HTTP/1.1\r\n";
        for piece in 1..wire.len() {
            assert_eq!(
                after_body(Skip::chunked(), wire, piece),
                b"POST /mcp HTTP/1.1\r\n",
                "{piece}"
            );
        }
        let no_trailers = b"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
        assert_eq!(
            after_body(Skip::chunked(), no_trailers, 4),
            b"GET / HTTP/1.1\r\n"
        );
    }

    #[test]
    fn a_gap_moves_a_known_length_on_and_ends_what_it_cannot_place() {
        let mut s = Skip::Length(100);
        s.gap(30);
        assert_eq!(s, Skip::Length(70));
        s.gap(70);
        assert_eq!(s, Skip::Done);
        let mut s = Skip::chunked();
        s.gap(1);
        assert_eq!(s, Skip::Done);
    }

    #[test]
    fn skips_a_length_body_and_stops_at_framing_it_cannot_read() {
        assert_eq!(after_body(Skip::Length(5), b"helloGET", 3), b"GET");
        // Not a size line: nothing more is skipped, so the rest is searched.
        assert_eq!(
            after_body(Skip::chunked(), b"zz\r\nGET", 2),
            b"zz\r\nGET"[1..].to_vec()
        );
        assert_eq!(
            after_body(Skip::chunked(), b"fffffffffffffff\r\n", 4).len(),
            6
        );
    }
}
