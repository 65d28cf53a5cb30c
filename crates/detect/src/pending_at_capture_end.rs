//! `pending_at_capture_end`: a request still waiting for its answer when the capture stopped,
//! with nothing to say it never came: the session had not gone on, nor the client given up. The
//! detector is `unanswered_request`'s, which tells the two apart.

use super::{FindingKind, KindInfo, Severity};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::PendingAtCaptureEnd,
    severity: Severity::Info,
    when: "a request still unanswered when the capture ended, with the session not gone on and the client not given up (or a stream it could come on still open)",
    meaning: "The capture stopped before the answer could have come: it is not evidence that the answer never came.",
    why: "A tool call that takes longer than the capture lasted looks unanswered; calling it so would be a false finding.",
    fix: "Capture longer (until the session ends, or the client's timeout), then analyse again.",
    requires: &[],
};

/// A pending request's evidence is an unanswered one's: the same detector tells them apart.
pub type Evidence = crate::unanswered_request::Evidence;
