//! The shape of a JSON document too large to keep whole. A tool result of 20 MiB is nearly
//! always one string (a base64 screenshot, a file), and the members that say what the message
//! is (`jsonrpc`, `id`, `result` or `error`) may come after it. Past the size a message may
//! keep, its bytes are copied with every string cut to its first [`KEEP_STRING`] bytes: what
//! is kept is still JSON, still small, and still has its `id`, wherever it was.
//!
//! Sans-IO and chunk-agnostic: the bytes may come in any pieces. Only strings are understood;
//! everything between them is copied as it is, so text that is not JSON passes through with its
//! quoted runs shortened.

/// Bytes kept of each string, cut at a character boundary and never inside an escape.
pub(crate) const KEEP_STRING: usize = 64 << 10;

#[derive(Debug, Default)]
pub(crate) struct JsonShrinker {
    in_string: bool,
    /// The previous byte was a backslash inside a string.
    escape: bool,
    /// Hex digits of a `\u` escape still to copy (never cut).
    hex_left: u8,
    /// Bytes kept of the current string.
    kept: usize,
    /// The rest of the current string is dropped.
    cutting: bool,
    /// Bytes dropped in all.
    pub(crate) dropped: u64,
}

impl JsonShrinker {
    /// Copies `input` to `out`, strings cut.
    pub(crate) fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut at = 0;
        while at < input.len() {
            let rest = &input[at..];
            if !self.in_string {
                match memchr::memchr(b'"', rest) {
                    Some(i) => {
                        out.extend_from_slice(&rest[..=i]);
                        at += i + 1;
                        (self.in_string, self.kept) = (true, 0);
                    }
                    None => {
                        out.extend_from_slice(rest);
                        return;
                    }
                }
            } else if self.escape {
                self.escape = false;
                if self.cutting {
                    self.dropped += 1;
                } else {
                    out.push(rest[0]);
                    self.kept += 1;
                    self.hex_left = if rest[0] == b'u' { 4 } else { 0 };
                }
                at += 1;
            } else {
                at += self.in_string_run(rest, out);
            }
        }
    }

    /// Takes the bytes of a string up to and including its next quote or backslash; returns
    /// how many.
    fn in_string_run(&mut self, rest: &[u8], out: &mut Vec<u8>) -> usize {
        let end = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
        let mut span = &rest[..end];
        if !self.cutting {
            let hex = span.len().min(usize::from(self.hex_left));
            out.extend_from_slice(&span[..hex]);
            self.hex_left -= hex as u8;
            self.kept += hex;
            span = &span[hex..];
            let room = KEEP_STRING.saturating_sub(self.kept);
            let mut take = span.len().min(room);
            if take < span.len() {
                // Not inside a UTF-8 sequence: back to the first byte of a character.
                while take > 0 && span[take] & 0xc0 == 0x80 {
                    take -= 1;
                }
                self.cutting = true;
            }
            out.extend_from_slice(&span[..take]);
            self.kept += take;
            span = &span[take..];
        }
        self.dropped += span.len() as u64;
        let Some(&special) = rest.get(end) else {
            return end;
        };
        if special == b'"' {
            out.push(b'"');
            (self.in_string, self.cutting) = (false, false);
        } else {
            self.escape = true;
            self.cutting |= self.kept >= KEEP_STRING;
            if self.cutting {
                self.dropped += 1;
            } else {
                out.push(b'\\');
                self.kept += 1;
            }
        }
        end + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shrink(pieces: &[&[u8]]) -> (Vec<u8>, u64) {
        let mut s = JsonShrinker::default();
        let mut out = Vec::new();
        for p in pieces {
            s.feed(p, &mut out);
        }
        (out, s.dropped)
    }

    #[test]
    fn long_strings_are_cut_and_the_rest_kept() {
        let big = "A".repeat(3 * KEEP_STRING);
        let doc = format!(r#"{{"jsonrpc":"2.0","result":{{"data":"{big}","n":[1,2]}},"id":7}}"#);
        let (out, dropped) = shrink(&[doc.as_bytes()]);
        assert_eq!(dropped, 2 * KEEP_STRING as u64);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["n"][1], 2);
        assert_eq!(v["result"]["data"].as_str().unwrap().len(), KEEP_STRING);
        // The same bytes in any pieces give the same output.
        for size in [1, 3, 1000, KEEP_STRING + 1] {
            let pieces: Vec<&[u8]> = doc.as_bytes().chunks(size).collect();
            assert_eq!(shrink(&pieces), (out.clone(), dropped), "{size}");
        }
    }

    #[test]
    fn cuts_fall_outside_escapes_and_characters() {
        for pad in 0..8 {
            let body = format!(
                "{}{}",
                "x".repeat(KEEP_STRING - 4 + pad),
                r#"\u00e9é\"\\\n"#.repeat(4)
            );
            let doc = format!(r#"["{body}",{{"id":"a\"b"}}]"#);
            for size in [1, 5, doc.len()] {
                let pieces: Vec<&[u8]> = doc.as_bytes().chunks(size).collect();
                let (out, _) = shrink(&pieces);
                let v: serde_json::Value =
                    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{pad} {size}: {e}"));
                assert_eq!(v[1]["id"], "a\"b");
            }
        }
    }

    #[test]
    fn small_documents_pass_unchanged() {
        let doc = br#"{"jsonrpc":"2.0","id":"x\"y","result":{"a":"\u00e9"}} tail"#;
        assert_eq!(shrink(&[doc]), (doc.to_vec(), 0));
    }
}
