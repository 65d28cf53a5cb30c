//! Signs of MCP in the client bytes of a connection set aside: searched with memchr's
//! vectorised search, a fraction of an instruction a byte, so that a connection whose first
//! request was not MCP but whose later ones are (a keep-alive connection a proxy or a browser
//! reuses) is found again.

use memchr::memmem::Finder;

/// What a request of MCP shows in its bytes: a session header (`ession-` found, then `id` in
/// any case: `Mcp-Session-Id` and `mcp-session-id` are how clients write it), an event stream
/// accepted or posted to, or the `initialize` every session starts with. Each is a pass over
/// the bytes, so they are few.
const SIGNS: [&[u8]; 3] = [b"ession-", b"/event-stream", b"\"initialize\""];
/// The longest sign less one: bytes of one chunk kept to find a sign split across two.
const CARRY: usize = 12;

/// The searchers, built once per run.
pub(super) struct Signs {
    /// The session header's, then the others'.
    finders: [Finder<'static>; SIGNS.len()],
}

/// The last bytes of one connection's previous chunk.
#[derive(Debug, Default)]
pub(super) struct Carry {
    tail: [u8; CARRY],
    len: u8,
}

impl Signs {
    pub(super) fn new() -> Self {
        Signs {
            finders: SIGNS.map(|s| Finder::new(s).into_owned()),
        }
    }

    /// Whether `data`, the next client bytes after those `carry` ends, shows a sign (across the
    /// two included).
    pub(super) fn found(&self, carry: &mut Carry, data: &[u8]) -> bool {
        let kept = usize::from(carry.len);
        // Without a carry the seam is the head of `data`, searched with the rest of it.
        let found = (kept > 0 && self.shown_by(carry.seam(data).as_slice())) || self.shown_by(data);
        carry.keep(data);
        found
    }

    /// Whether `bytes` hold a sign, searched with `find` (an iterator would copy the searcher
    /// for each call).
    fn shown_by(&self, bytes: &[u8]) -> bool {
        let [session, others @ ..] = &self.finders;
        if others.iter().any(|f| f.find(bytes).is_some()) {
            return true;
        }
        let mut from = 0;
        while let Some(at) = bytes.get(from..).and_then(|rest| session.find(rest)) {
            let end = from + at + SIGNS[0].len();
            if session_id_at(&bytes[end..]) {
                return true;
            }
            from += at + 1;
        }
        false
    }
}

/// A carry and the head of the next bytes, side by side.
struct Seam {
    bytes: [u8; 2 * CARRY],
    len: usize,
}

impl Seam {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Whether `rest`, the bytes after an `ession-`, begin `id` in any case: `-Session-Id`, not
/// `-Session-Token`.
fn session_id_at(rest: &[u8]) -> bool {
    rest.get(..2)
        .is_some_and(|id| id.eq_ignore_ascii_case(b"id"))
}

impl Carry {
    /// The bytes kept and the head of `data`: where a sign split across the two shows.
    fn seam(&self, data: &[u8]) -> Seam {
        let mut seam = [0u8; 2 * CARRY];
        let head = &data[..data.len().min(CARRY)];
        let kept = usize::from(self.len);
        seam[..kept].copy_from_slice(&self.tail[..kept]);
        seam[kept..kept + head.len()].copy_from_slice(head);
        Seam {
            bytes: seam,
            len: kept + head.len(),
        }
    }

    fn keep(&mut self, data: &[u8]) {
        if data.len() >= CARRY {
            self.tail.copy_from_slice(&data[data.len() - CARRY..]);
            self.len = CARRY as u8;
            return;
        }
        let old = usize::from(self.len);
        let keep_old = old.min(CARRY - data.len());
        self.tail.copy_within(old - keep_old..old, 0);
        self.tail[keep_old..keep_old + data.len()].copy_from_slice(data);
        self.len = (keep_old + data.len()) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_sign_whole_or_split_across_chunks() {
        let signs = Signs::new();
        let text = b"POST /mcp HTTP/1.1\r\nMcp-Session-Id: 1\r\n\r\n";
        for cut in 0..text.len() {
            let mut carry = Carry::default();
            let first = signs.found(&mut carry, &text[..cut]);
            let second = signs.found(&mut carry, &text[cut..]);
            assert!(first || second, "cut at {cut}");
        }
        // Split into single bytes: the carry holds the sign's start.
        let mut carry = Carry::default();
        let body = br#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#;
        assert!(
            body.iter()
                .any(|b| signs.found(&mut carry, std::slice::from_ref(b)))
        );
        let mut carry = Carry::default();
        assert!(!signs.found(&mut carry, b"GET /download HTTP/1.1\r\nAccept: */*\r\n\r\n"));
        assert!(!signs.found(&mut carry, b"X-Session-Token: 1\r\n"));
        assert!(signs.found(&mut carry, b"mcp-session-id: 2\r\n"));
        assert!(!signs.found(&mut carry, br#"{"jsonrpc":"2.0","method":"eth_call"}"#));
    }
}
