//! What the first bytes of a cut JSON-RPC body still show. A capture taken with a small snap
//! length keeps the start of each segment: often `{"jsonrpc":"2.0","id":1,"method":"initialize"`
//! and nothing after. No JSON parser reads a document that stops in the middle (they reject it,
//! rightly), so this walks the top-level keys of the object by hand, as far as the bytes go, and
//! reports the `method` only if its whole string value is there.

/// The top-level `method` of a JSON-RPC message (or of the first message of a batch) whose
/// bytes stop short; `None` unless the bytes show that string whole.
pub(crate) fn method_in_prefix(bytes: &[u8]) -> Option<String> {
    let mut s = Scan { b: bytes, at: 0 };
    s.ws();
    if s.eat(b'[') {
        s.ws();
    }
    if !s.eat(b'{') {
        return None;
    }
    loop {
        s.ws();
        let key = s.string()?;
        s.ws();
        if !s.eat(b':') {
            return None;
        }
        s.ws();
        if key == b"\"method\"" {
            let value = s.string()?;
            return serde_json::from_slice(value).ok();
        }
        s.skip_value()?;
        s.ws();
        if !s.eat(b',') {
            return None;
        }
    }
}

/// The `id` and `method` of a JSON-RPC message whose bytes stop short, as far as they are there
/// whole (an `id` number cut at the end of the bytes is not whole: more digits may follow).
pub(crate) fn request_in_prefix(
    bytes: &[u8],
) -> (Option<crate::jsonrpc::RequestId>, Option<String>) {
    use crate::jsonrpc::RequestId;
    let mut s = Scan { b: bytes, at: 0 };
    let (mut id, mut method) = (None, None);
    s.ws();
    if s.eat(b'[') {
        s.ws();
    }
    if !s.eat(b'{') {
        return (None, None);
    }
    while let Some(key) = {
        s.ws();
        s.string()
    } {
        s.ws();
        if !s.eat(b':') {
            break;
        }
        s.ws();
        let start = s.at;
        if s.skip_value().is_none() {
            break;
        }
        let value = s.b[start..s.at].trim_ascii();
        match key {
            b"\"method\"" => method = serde_json::from_slice::<String>(value).ok(),
            b"\"id\"" => {
                id = match value.first() {
                    Some(b'"') => serde_json::from_slice::<String>(value)
                        .ok()
                        .map(RequestId::String),
                    Some(c) if c.is_ascii_digit() || *c == b'-' => std::str::from_utf8(value)
                        .ok()
                        .filter(|t| t.parse::<f64>().is_ok())
                        .map(|t| RequestId::Number(t.to_string())),
                    _ => None,
                }
            }
            _ => {}
        }
        s.ws();
        if !s.eat(b',') {
            break;
        }
    }
    (id, method)
}

struct Scan<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while self.b.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.at) == Some(&c);
        self.at += usize::from(hit);
        hit
    }

    /// A whole string, quotes included; `None` if it does not start here or is cut.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        if !self.eat(b'"') {
            return None;
        }
        let mut escaped = false;
        while let Some(&c) = self.b.get(self.at) {
            self.at += 1;
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => return Some(&self.b[start..self.at]),
                _ => {}
            }
        }
        None
    }

    /// Past one value of any kind, stopping before the `,` or `}` after it; `None` if the bytes
    /// end first.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.at)? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => return Some(()),
                b'}' | b']' => depth -= 1,
                b',' if depth == 0 => return Some(()),
                _ => {}
            }
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{method_in_prefix, request_in_prefix};
    use crate::jsonrpc::RequestId;

    #[test]
    fn the_id_and_method_of_a_cut_request() {
        let cut = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rein"#;
        assert_eq!(
            request_in_prefix(cut),
            (
                Some(RequestId::Number("7".into())),
                Some("tools/call".into())
            )
        );
        let cut = br#"{"method":"tools/list","id":"a-1"}"#;
        assert_eq!(
            request_in_prefix(cut).0,
            Some(RequestId::String("a-1".into()))
        );
        // A number at the end of the bytes may have lost digits.
        assert_eq!(request_in_prefix(br#"{"method":"ping","id":12"#).0, None);
        assert_eq!(request_in_prefix(b"not json"), (None, None));
    }

    fn m(s: &str) -> Option<String> {
        method_in_prefix(s.as_bytes())
    }

    #[test]
    fn the_method_of_a_cut_message() {
        let cut = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"proto"#;
        assert_eq!(m(cut).as_deref(), Some("initialize"));
        let batch = r#" [ {"jsonrpc":"2.0","id":"a,}","method":"tools/call","par"#;
        assert_eq!(m(batch).as_deref(), Some("tools/call"));
    }

    #[test]
    fn values_before_the_method_are_skipped_whole() {
        let nested = r#"{"params":{"a":[1,{"b":"}]"}],"c":"\"x"},"method":"tools/list"}"#;
        assert_eq!(m(nested).as_deref(), Some("tools/list"));
        let escaped = r#"{"method":"a\/b"}"#;
        assert_eq!(m(escaped).as_deref(), Some("a/b"));
    }

    #[test]
    fn nothing_unless_the_method_is_whole() {
        assert_eq!(m(r#"{"jsonrpc":"2.0","id":1,"method":"initial"#), None);
        assert_eq!(m(r#"{"jsonrpc":"2.0","id":1,"meth"#), None);
        assert_eq!(
            m(r#"{"jsonrpc":"2.0","params":{"method":"tools/call"#),
            None
        );
        assert_eq!(m(r#"{"result":{},"id":1}"#), None);
        assert_eq!(m("POST /mcp HTTP/1.1\r\n"), None);
        assert_eq!(m(""), None);
        assert_eq!(m(r#"{"method":1}"#), None);
    }
}
