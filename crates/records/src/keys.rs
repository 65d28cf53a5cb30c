//! The logical session key of each exchange, as its own messages name it: what a fleet groups
//! records by before the MCP stage decides, on all of them, which session each belongs to.

use std::collections::HashMap;

use mcpf_http::{ExchangeId, HttpEvent};

/// The session ID each open exchange named; an exchange's entry goes when it ends, so the map
/// holds no more than the HTTP stage holds open.
#[derive(Default)]
pub struct SessionKeys {
    open: HashMap<ExchangeId, String>,
}

impl SessionKeys {
    /// The key of `event`'s exchange after it: a request's `Mcp-Session-Id` (or the `sessionId`
    /// of a legacy POST's target), else its response's, else a legacy stream's `endpoint` event.
    pub fn key(&mut self, event: &HttpEvent) -> Option<String> {
        match event {
            HttpEvent::Request(r) => {
                let named = r
                    .headers
                    .get("mcp-session-id")
                    .map(str::to_string)
                    .or_else(|| query_session(&r.target));
                self.name(r.exchange, named)
            }
            HttpEvent::ResponseHead(h) => {
                let named = h.headers.get("mcp-session-id").map(str::to_string);
                self.name(h.exchange, named)
            }
            HttpEvent::SseEvent { exchange, event } => {
                let named = (event.event == "endpoint")
                    .then(|| query_session(&event.data))
                    .flatten();
                self.name(*exchange, named)
            }
            HttpEvent::ResponseEnd(end) => self.open.remove(&end.exchange),
            HttpEvent::NoResponse { exchange, .. } => self.open.remove(exchange),
            _ => None,
        }
    }

    /// Records `named` for the exchange unless it has a key already; returns its key.
    fn name(&mut self, exchange: ExchangeId, named: Option<String>) -> Option<String> {
        if let Some(k) = self.open.get(&exchange) {
            return Some(k.clone());
        }
        let k = named?;
        self.open.insert(exchange, k.clone());
        Some(k)
    }
}

/// The `sessionId` (or `session_id`) query parameter of a target or endpoint URL.
fn query_session(target: &str) -> Option<String> {
    let query = target.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == "sessionId" || *k == "session_id")
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_target_names_its_session() {
        assert_eq!(
            query_session("/messages?sessionId=abc&x=1").as_deref(),
            Some("abc")
        );
        assert_eq!(
            query_session("/messages/?session_id=9f#x").as_deref(),
            Some("9f")
        );
        assert_eq!(query_session("/messages?sessionId="), None);
        assert_eq!(query_session("/mcp"), None);
    }
}
