//! `retry_not_honoured`: the client reconnected to a stream sooner than the last `retry` value
//! the server gave on it. From 2025-11-25 a server that closes a connection before its stream is
//! over SHOULD send `retry`, and "the client MUST respect the retry field" (the WHATWG
//! reconnection time). Only a stream the client did not end itself counts, and only the resume
//! that continues it.

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::{Session, Stream};
use mcpf_model::Direction;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::RetryNotHonoured,
    severity: Severity::Low,
    when: "the client reconnected sooner than the server's last retry value after the stream was closed or broken",
    meaning: "The server asked the client to wait retry milliseconds before reconnecting, and the client came back sooner.",
    why: "A server closes streams on purpose (polling, load shedding) and sets retry to spread the reconnects; clients that ignore it reconnect in a herd, and a server that counts on the pause may not have the stream's events ready.",
    fix: "Client: wait at least the last retry value (per stream) before reconnecting with Last-Event-ID.",
    requires: &[],
};

/// Capture times are good to the microsecond; a millisecond covers rounding in the SSE value.
const SLACK_MS: f64 = 1.0;

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    for r in &s.streams {
        let Some(lost) = r
            .resume
            .as_ref()
            .and_then(|x| x.continues)
            .map(|c| &s.streams[c])
        else {
            continue;
        };
        let (Some(retry), Some(ended)) = (last_retry(lost), lost.ended) else {
            continue;
        };
        if !left_by_the_server_or_the_network(lost) {
            continue;
        }
        let waited_ms = r.opened.time.seconds_since(ended.time) * 1000.0;
        if waited_ms + SLACK_MS >= retry as f64 || waited_ms < 0.0 {
            continue;
        }
        f.add(
            s,
            New {
                kind: FindingKind::RetryNotHonoured,
                severity: INFO.severity,
                time: r.opened,
                frames: vec![ended, r.opened],
                streams: vec![lost.idx, r.idx],
                summary: format!(
                    "{} reconnected {waited_ms:.0} ms after {} ended, sooner than its retry of {retry} ms",
                    r.label(),
                    lost.label()
                ),
                evidence: crate::Evidence::RetryNotHonoured(Evidence {
                    retry_ms: retry,
                    waited_ms: (waited_ms * 1000.0).round() / 1000.0,
                    stream: lost.label(),
                    resume_stream: r.label(),
                }),
                caused_by: Vec::new(),
                subject: Subject::Resume(r.idx),
            },
        );
    }
}

/// The stream's last `retry`: from the SSE parser's count, else from its last event that had one.
fn last_retry(st: &Stream) -> Option<u64> {
    st.last_retry.or_else(|| {
        st.events
            .iter()
            .rev()
            .find_map(|e| e.rare.as_ref().and_then(|r| r.retry))
            .map(u64::from)
    })
}

fn left_by_the_server_or_the_network(st: &Stream) -> bool {
    st.interrupted() && st.closed_by != Some(Direction::ClientToServer) && !st.gap
}

/// The evidence of a `retry_not_honoured`: the stream the server closed or lost, its last
/// `retry`, and how soon the client resumed it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// The stream's last `retry` value, in milliseconds.
    pub retry_ms: u64,
    /// From the stream's end to the resume, in milliseconds (microsecond precision).
    pub waited_ms: f64,
    /// The stream that ended.
    pub stream: String,
    /// The resume that continues it.
    pub resume_stream: String,
}
