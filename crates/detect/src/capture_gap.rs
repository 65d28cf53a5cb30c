//! `capture_gap`: bytes that crossed the wire under an MCP exchange are not in the capture. Every
//! finding that rests on that exchange says its confidence is reduced.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::model::Session;

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::CaptureGap,
    severity: Severity::Low,
    when: "packets are missing from the capture under an MCP stream or exchange (info when the snap length cut them: recorded short, not lost)",
    meaning: "The capture lost bytes that the client or server really sent (dropped by the capturing host, cut by the snap length, or taken mid-connection). The analyzer skips past the hole and says so instead of joining the bytes around it.",
    why: "Events, responses or requests may have been in the missing bytes: a finding that rests on this stream (a skipped range, an unanswered request) may be an artefact of the capture rather than of the server.",
    fix: "Capture with tcpdump -s 0 -U on a host that is not overloaded (or with a larger -B buffer), on the leg closest to the component you suspect, and compare with the capture of the other leg if you have it.",
    requires: &[],
};

pub(crate) fn detect(s: &Session, f: &mut Findings) {
    for st in s.streams.iter().filter(|st| st.gap) {
        let first_after = st.events.iter().find(|e| e.after_gap).map(|e| e.mark);
        let time = first_after.or(st.ended).unwrap_or(st.opened);
        let bytes = (st.gap_bytes > 0).then_some(st.gap_bytes);
        // Bytes the snap length cut crossed the wire whole: a property of the capture, not a
        // loss, and said once for the input; here only a note of what it hides.
        let cut = st.cut_by_snaplen_only();
        f.add(
            s,
            New {
                kind: FindingKind::CaptureGap,
                severity: if cut { Severity::Info } else { INFO.severity },
                time,
                frames: vec![st.opened, time],
                streams: vec![st.idx],
                summary: match bytes {
                    Some(b) if cut => format!(
                        "{b} bytes of {} not recorded: the capture's snap length cut them",
                        st.label()
                    ),
                    Some(b) => format!("{b} bytes missing from the capture under {}", st.label()),
                    None => format!("bytes missing from the capture under {}", st.label()),
                },
                evidence: crate::Evidence::CaptureGap(Evidence {
                    stream: st.label(),
                    exchange: st.exchange.to_string(),
                    bytes,
                    cut_by_snap_length: st.snaplen_bytes,
                    events_dropped_at_gap: st.events.iter().filter(|e| e.after_gap).count() as u64,
                }),
                caused_by: vec![],
                subject: Subject::Stream(st.idx),
            },
        );
    }
}

/// The evidence of a `capture_gap`: the stream whose bytes the capture lacks, how many, and
/// what the hole hides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub stream: String,
    pub exchange: String,
    /// Bytes missing under the stream; none when the capture does not say how many.
    pub bytes: Option<u64>,
    /// Of those, bytes the snap length cut (recorded short, not lost).
    pub cut_by_snap_length: u64,
    /// Events of the stream that begin after the hole (their start may be lost with it).
    pub events_dropped_at_gap: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence as the report writes it is read back, and written again byte for byte.
    #[test]
    fn a_gap_is_read_back_from_the_report() {
        for text in [
            r#"{"stream":"post:s5","exchange":"tcp4#1","bytes":97,"cut_by_snap_length":0,"events_dropped_at_gap":0}"#,
            r#"{"stream":"get:s4","exchange":"tcp2#1","bytes":null,"cut_by_snap_length":0,"events_dropped_at_gap":2}"#,
        ] {
            let e: Evidence = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
    }
}
