//! `status_code_violation`: an HTTP status the transport's rules do not allow for what the
//! request was, judged by the session's revision: a POST of notifications or responses only
//! answered other than 202 (2025-03-26 on: "MUST return HTTP status code 202 Accepted"); a GET
//! for an event stream answered 2xx with something else than an event stream (it "MUST either
//! return Content-Type: text/event-stream … or else return HTTP 405"); under 2026-07-28, a GET or
//! DELETE answered other than 405 (it has no GET stream and no sessions); a request naming a
//! session after its DELETE was answered 2xx, answered 2xx itself (a terminated session "MUST"
//! be answered 404; the DELETE may be in the record this one continues). Error statuses
//! (4xx, 5xx) are the server refusing, and are left alone, and so is an exchange whose head the
//! input lacks. From 2025-06-18 a request whose `MCP-Protocol-Version` is not a revision at all
//! "MUST" get 400. A request without `Mcp-Session-Id` to a server that mints session IDs at that
//! endpoint (it did so earlier in the input) "SHOULD" get 400. Whether an `Origin` is invalid
//! (403 from 2025-11-25) is the server's configuration, which no input shows: not judged.

use super::{FindingKind, Findings, KindInfo, New, Severity};
use mcpf_mcp::jsonrpc::Kind;
use mcpf_mcp::model::{Session, Stream, StreamTransport, Transport};
use mcpf_mcp::revision::{STATELESS, STREAMABLE_HTTP, VERSION_HEADER};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::StatusCodeViolation,
    severity: Severity::Low,
    when: "a status the transport's rules do not allow: notifications answered other than 202, a GET for an event stream answered 2xx without one, GET or DELETE not 405 under 2026-07-28, a request of a deleted session answered 2xx instead of 404, a request with an MCP-Protocol-Version that is no revision or without Mcp-Session-Id at a server that mints them answered 2xx instead of 400",
    meaning: "The server answered a request with a status its revision of the transport does not allow for that kind of request.",
    why: "Clients decide what to do by the status: an SDK that waits for 202 after a notification, or for an event stream or 405 after its GET, misreads the answer (it may fall back, retry, or hang).",
    fix: "Server: 202 with no body for notifications and responses; text/event-stream or 405 for a GET; from 2026-07-28 on, 405 for GET and DELETE; 404 for every request naming a session once it was deleted; 400 for an invalid MCP-Protocol-Version and for a request without the session ID the server requires.",
    requires: &[],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    if s.transport == Transport::LegacySse || !s.revision.at_least(STREAMABLE_HTTP) {
        return;
    }
    for st in s
        .streams
        .iter()
        .filter(|st| !st.gap && st.response_mark.is_some())
    {
        let Some(status) = st.status.filter(|c| (200..300).contains(c)) else {
            continue;
        };
        let rule = broken_rule(s, st, status);
        if let Some((rule, what)) = rule {
            f.add(s, finding(s, st, status, rule, what));
        }
    }
}

/// Which rule the status breaks, with what happened in words.
fn broken_rule(s: &Session, st: &Stream, status: u16) -> Option<(Rule, String)> {
    if let Some(at) = deleted_before(s, st) {
        let what = format!(
            "{} named the session deleted at {} and was answered {status}, not 404",
            st.method,
            at.time.clock_millis()
        );
        return Some((Rule::DeletedSessionNot404, what));
    }
    if let Some(v) = st.protocol_version_header.as_deref()
        && s.revision.at_least(VERSION_HEADER)
        && !is_revision_date(v)
    {
        let what = format!(
            "a request with MCP-Protocol-Version \"{v}\" (not a revision) was answered {status}, not 400"
        );
        return Some((Rule::InvalidVersionHeaderNot400, what));
    }
    if let Some(minted) = lacks_session_header(s, st) {
        let what = format!(
            "{} without Mcp-Session-Id, to a server that has minted session IDs at this endpoint since {}, was answered {status}, not 400",
            st.method,
            minted.time.clock_millis()
        );
        return Some((Rule::SessionHeaderMissingNot400, what));
    }
    if st.transport == StreamTransport::Post && only_notifications(st) && status != 202 {
        let what = format!("a POST of notifications only was answered {status}, not 202 Accepted");
        return Some((Rule::NotificationNot202, what));
    }
    if s.revision.at_least(STATELESS) && matches!(st.method.as_str(), "GET" | "DELETE") {
        let what = format!(
            "{} was answered {status}; from {STATELESS} a server answers GET and DELETE 405",
            st.method
        );
        return Some((Rule::Not405In2026, what));
    }
    if st.transport != StreamTransport::Get || !st.accept_sse || st.event_stream {
        return None;
    }
    // Only a content type the input recorded: a log may not carry it at all.
    let ct = st.content_type.as_deref()?;
    let what = format!(
        "a GET for an event stream was answered {status} {ct}, neither an event stream nor 405"
    );
    Some((Rule::GetNotEventStream, what))
}

/// When the session this request names was deleted (a DELETE answered 2xx) before it was sent.
fn deleted_before(s: &Session, st: &Stream) -> Option<mcpf_model::Mark> {
    let sid = s.session_id.as_deref()?;
    (st.session_id_sent.as_deref() == Some(sid)).then_some(())?;
    s.first_deletion().filter(|d| d.time < st.opened.time)
}

/// A revision is named by its date, `YYYY-MM-DD`; anything else is invalid ("MUST" get 400).
fn is_revision_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// When the server first minted a session ID at this endpoint, if this request of a session
/// without one came after it in the same input. A session that was initialized and given no ID
/// is one the server chose to run without: not judged.
fn lacks_session_header(s: &Session, st: &Stream) -> Option<mcpf_model::Mark> {
    let minted = s.server_mints_ids?;
    let judged = !s.initialize_seen
        && !s.revision.at_least(STATELESS)
        && st.session_id_sent.is_none()
        && minted.frame.input == st.opened.frame.input
        && minted.time < st.opened.time;
    judged.then_some(minted)
}

/// A request body of JSON-RPC notifications and responses, and nothing else.
fn only_notifications(st: &Stream) -> bool {
    !st.client_messages.is_empty()
        && st
            .client_messages
            .iter()
            .all(|m| matches!(m.kind, Kind::Notification | Kind::Response | Kind::Error))
}

fn finding(s: &Session, st: &Stream, status: u16, rule: Rule, what: String) -> New {
    let at = st.response_mark.unwrap_or(st.opened);
    super::revision_rule(s, st, at, (rule, what), |b| {
        crate::Evidence::StatusCodeViolation(Evidence {
            rule: b.rule,
            revision: b.revision,
            stream: b.stream,
            time: b.time,
            frame: b.frame,
            status,
        })
    })
}

/// The evidence of a `status_code_violation`: the rule of the session's revision a status
/// broke, where, and the status.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    pub rule: Rule,
    /// The session's revision, by its date.
    pub revision: String,
    pub stream: String,
    /// When the response came (when the request was sent if its head was not captured).
    pub time: String,
    pub frame: u64,
    /// The HTTP status the server answered.
    pub status: u16,
}

/// The status rules of the transport (docs/report-format.md, `status_code_violation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// A request naming the session after its DELETE answered 2xx, not 404.
    #[serde(rename = "deleted_session_not_404")]
    DeletedSessionNot404,
    /// From 2025-06-18, an `MCP-Protocol-Version` that is no revision date answered 2xx, not 400.
    #[serde(rename = "invalid_version_header_not_400")]
    InvalidVersionHeaderNot400,
    /// A request without `Mcp-Session-Id` to a server that mints them answered 2xx, not 400.
    #[serde(rename = "session_header_missing_not_400")]
    SessionHeaderMissingNot400,
    /// A POST of notifications or responses only answered 2xx, not 202.
    #[serde(rename = "notification_not_202")]
    NotificationNot202,
    /// Under 2026-07-28, a GET or DELETE answered 2xx, not 405.
    #[serde(rename = "not_405_in_2026")]
    Not405In2026,
    /// A GET for an event stream answered 2xx with another content type.
    GetNotEventStream,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_keeps_its_name_in_the_report() {
        for (rule, name) in [
            (Rule::DeletedSessionNot404, "deleted_session_not_404"),
            (Rule::InvalidVersionHeaderNot400, "invalid_version_header_not_400"),
            (Rule::SessionHeaderMissingNot400, "session_header_missing_not_400"),
            (Rule::NotificationNot202, "notification_not_202"),
            (Rule::Not405In2026, "not_405_in_2026"),
            (Rule::GetNotEventStream, "get_not_event_stream"),
        ] {
            assert_eq!(serde_json::to_value(rule).unwrap(), name);
            assert_eq!(serde_json::from_value::<Rule>(name.into()).unwrap(), rule);
        }
    }
}
