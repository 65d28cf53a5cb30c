//! The finding kinds: one enum, and the registry that says what each means. It drives
//! `explain`, the man page, the docs and the JSON `kind` string.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::Severity;

/// Every kind of finding, in the order the detectors run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingKind {
    CaptureGap,
    SseFallback,
    UnsafeResumptionAfterFallback,
    CrossNamespaceReplay,
    EventIdReset,
    ResumeGap,
    SessionNotReaffirmed,
    SessionIdChanged,
    DuplicateResponse,
    RequestIdReused,
    SkippedEvents,
    UnansweredRequest,
    RetryWithoutIdempotencyKey,
    LostInTransit,
    RevisionViolation,
    PendingAtCaptureEnd,
    EventIdCollision,
    ResponseOnStandaloneStream,
    CursorDropped,
    RetryNotHonoured,
    StatusCodeViolation,
    CrossSessionReplay,
    SessionNotFound,
    StreamStalled,
    ResyncWithoutReconciliation,
}

impl FindingKind {
    /// Every kind, in the order the detectors run.
    pub const ALL: [FindingKind; 25] = [
        FindingKind::CaptureGap,
        FindingKind::SseFallback,
        FindingKind::UnsafeResumptionAfterFallback,
        FindingKind::CrossNamespaceReplay,
        FindingKind::EventIdReset,
        FindingKind::ResumeGap,
        FindingKind::SessionNotReaffirmed,
        FindingKind::SessionIdChanged,
        FindingKind::DuplicateResponse,
        FindingKind::RequestIdReused,
        FindingKind::SkippedEvents,
        FindingKind::UnansweredRequest,
        FindingKind::RetryWithoutIdempotencyKey,
        FindingKind::LostInTransit,
        FindingKind::RevisionViolation,
        FindingKind::PendingAtCaptureEnd,
        FindingKind::EventIdCollision,
        FindingKind::ResponseOnStandaloneStream,
        FindingKind::CursorDropped,
        FindingKind::RetryNotHonoured,
        FindingKind::StatusCodeViolation,
        FindingKind::CrossSessionReplay,
        FindingKind::SessionNotFound,
        FindingKind::StreamStalled,
        FindingKind::ResyncWithoutReconciliation,
    ];

    /// What the kind means, from the file of its detector.
    pub fn info(self) -> &'static KindInfo {
        use crate::*;
        match self {
            FindingKind::CaptureGap => &capture_gap::INFO,
            FindingKind::SseFallback => &sse_fallback::INFO,
            FindingKind::UnsafeResumptionAfterFallback => &unsafe_resumption_after_fallback::INFO,
            FindingKind::CrossNamespaceReplay => &cross_namespace_replay::INFO,
            FindingKind::EventIdReset => &event_id_reset::INFO,
            FindingKind::ResumeGap => &resume_gap::INFO,
            FindingKind::SessionNotReaffirmed => &session_not_reaffirmed::INFO,
            FindingKind::SessionIdChanged => &session_id_changed::INFO,
            FindingKind::DuplicateResponse => &duplicate_response::INFO,
            FindingKind::RequestIdReused => &request_id_reused::INFO,
            FindingKind::SkippedEvents => &skipped_events::INFO,
            FindingKind::UnansweredRequest => &unanswered_request::INFO,
            FindingKind::RetryWithoutIdempotencyKey => &retry_without_idempotency_key::INFO,
            FindingKind::LostInTransit => &lost_in_transit::INFO,
            FindingKind::RevisionViolation => &revision_violation::INFO,
            FindingKind::PendingAtCaptureEnd => &pending_at_capture_end::INFO,
            FindingKind::EventIdCollision => &event_id_collision::INFO,
            FindingKind::ResponseOnStandaloneStream => &response_on_standalone_stream::INFO,
            FindingKind::CursorDropped => &cursor_dropped::INFO,
            FindingKind::RetryNotHonoured => &retry_not_honoured::INFO,
            FindingKind::StatusCodeViolation => &status_code_violation::INFO,
            FindingKind::CrossSessionReplay => &cross_session_replay::INFO,
            FindingKind::SessionNotFound => &session_not_found::INFO,
            FindingKind::StreamStalled => &stream_stalled::INFO,
            FindingKind::ResyncWithoutReconciliation => &resync_without_reconciliation::INFO,
        }
    }

    /// The name in every output: `cross_namespace_replay`.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::CaptureGap => "capture_gap",
            FindingKind::SseFallback => "sse_fallback",
            FindingKind::UnsafeResumptionAfterFallback => "unsafe_resumption_after_fallback",
            FindingKind::CrossNamespaceReplay => "cross_namespace_replay",
            FindingKind::EventIdReset => "event_id_reset",
            FindingKind::ResumeGap => "resume_gap",
            FindingKind::SessionNotReaffirmed => "session_not_reaffirmed",
            FindingKind::SessionIdChanged => "session_id_changed",
            FindingKind::DuplicateResponse => "duplicate_response",
            FindingKind::RequestIdReused => "request_id_reused",
            FindingKind::SkippedEvents => "skipped_events",
            FindingKind::UnansweredRequest => "unanswered_request",
            FindingKind::RetryWithoutIdempotencyKey => "retry_without_idempotency_key",
            FindingKind::LostInTransit => "lost_in_transit",
            FindingKind::RevisionViolation => "revision_violation",
            FindingKind::PendingAtCaptureEnd => "pending_at_capture_end",
            FindingKind::EventIdCollision => "event_id_collision",
            FindingKind::ResponseOnStandaloneStream => "response_on_standalone_stream",
            FindingKind::CursorDropped => "cursor_dropped",
            FindingKind::RetryNotHonoured => "retry_not_honoured",
            FindingKind::StatusCodeViolation => "status_code_violation",
            FindingKind::CrossSessionReplay => "cross_session_replay",
            FindingKind::SessionNotFound => "session_not_found",
            FindingKind::StreamStalled => "stream_stalled",
            FindingKind::ResyncWithoutReconciliation => "resync_without_reconciliation",
        }
    }

    /// The kind of a name as outputs spell it.
    pub fn from_name(name: &str) -> Option<FindingKind> {
        FindingKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn severity(self) -> Severity {
        self.info().severity
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FindingKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a finding kind means, for people: `explain`, the man page and the README table.
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    pub kind: FindingKind,
    pub severity: Severity,
    /// One line: when it is raised.
    pub when: &'static str,
    pub meaning: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    /// The keys of the finding's `evidence` object.
    pub evidence: &'static [&'static str],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_described_by_its_own_detector() {
        for k in FindingKind::ALL {
            assert_eq!(k.info().kind, k, "{k}");
            assert_eq!(FindingKind::from_name(k.name()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert_eq!(FindingKind::from_name("nope"), None);
    }
}
