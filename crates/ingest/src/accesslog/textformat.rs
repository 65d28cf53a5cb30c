//! `--log-format`: nginx's text access logs (the `combined` format, or any `log_format` string
//! with extra quoted fields for the MCP headers), for operators who never switched to JSON. The
//! format names a variable where each value stands; a line is read against it into the same
//! variables an `escape=json` line holds, and then read as one.

use serde_json::{Map, Value};

use super::LogMapError;

/// nginx's predefined `combined` format.
const COMBINED: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(String),
}

/// A `log_format` string, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextFormat {
    parts: Vec<Part>,
}

impl TextFormat {
    /// `combined`, or a `log_format` string of `$variable`s (or `${variable}`s) and the text
    /// between them.
    pub fn parse(spec: &str) -> Result<TextFormat, LogMapError> {
        let spec = if spec.trim() == "combined" {
            COMBINED
        } else {
            spec
        };
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = spec.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '$' {
                text.push(c);
                continue;
            }
            let braced = chars.next_if_eq(&'{').is_some();
            let mut name = String::new();
            while let Some(&n) = chars.peek() {
                if n.is_ascii_alphanumeric() || n == '_' {
                    name.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            if braced && chars.next() != Some('}') {
                return Err(LogMapError::Format(format!("${{{name}: no closing brace")));
            }
            if name.is_empty() {
                text.push('$');
                continue;
            }
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            if matches!(parts.last(), Some(Part::Var(_))) {
                return Err(LogMapError::Format(format!(
                    "${name} follows another variable with nothing between them: where one ends cannot be told"
                )));
            }
            parts.push(Part::Var(name));
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
            return Err(LogMapError::Format("no $variable in the format".into()));
        }
        Ok(TextFormat { parts })
    }

    /// A line's variables, or None when it does not follow the format. A value runs to where
    /// the text after it in the format next appears (nginx escapes a `"` inside a value).
    pub(super) fn read(&self, line: &str) -> Option<Map<String, Value>> {
        let line = line.trim_end_matches(['\n', '\r']);
        let mut out = Map::new();
        let mut at = 0;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Text(t) => {
                    if !line[at..].starts_with(t.as_str()) {
                        return None;
                    }
                    at += t.len();
                }
                Part::Var(name) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Text(next)) => at + line[at..].find(next.as_str())?,
                        _ => line.len(),
                    };
                    out.insert(name.clone(), Value::String(line[at..end].to_string()));
                    at = end;
                }
            }
        }
        (at == line.len()).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_combined_line_gives_its_variables() {
        let f = TextFormat::parse("combined").unwrap();
        let line = r#"127.0.0.1 - - [30/Nov/2026:04:36:07 +0000] "POST /mcp HTTP/1.1" 499 0 "-" "seed-client/1.0.0""#;
        let v = f.read(line).unwrap();
        assert_eq!(v["request"], "POST /mcp HTTP/1.1");
        assert_eq!(v["status"], "499");
        assert_eq!(v["time_local"], "30/Nov/2026:04:36:07 +0000");
        assert_eq!(v["http_user_agent"], "seed-client/1.0.0");
        assert_eq!(f.read("not a log line"), None);
    }

    #[test]
    fn extra_quoted_fields_and_braces() {
        let f = TextFormat::parse(r#"$remote_addr [$time_local] "$request" $status ${request_time}s "$http_mcp_session_id""#).unwrap();
        let v = f
            .read(r#"::1 [30/Nov/2026:04:36:07 +0000] "GET /mcp HTTP/1.1" 200 4.006s "2665c7""#)
            .unwrap();
        assert_eq!(v["request_time"], "4.006");
        assert_eq!(v["http_mcp_session_id"], "2665c7");
    }

    #[test]
    fn formats_that_cannot_be_read_say_why() {
        assert!(TextFormat::parse("$status$request_time").is_err());
        assert!(TextFormat::parse("no variables").is_err());
        assert!(TextFormat::parse("${status").is_err());
    }
}
