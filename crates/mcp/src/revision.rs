//! The protocol revision a session is judged by, and the transport rules that differ between
//! revisions (`docs/revisions.md` has the table). A session's revision is the one its
//! `initialize` result names; else its requests' `MCP-Protocol-Version` header; else
//! 2025-03-26, which 2025-06-18 tells a server to assume when the header is missing (and
//! 2024-11-05 for the HTTP+SSE transport, the only revision that has it alone).
//!
//! Revisions are dates, and a rule holds from one date on: a date this table does not know is
//! judged by the rules of the newest revision at or before it.

use std::fmt;

use serde::Serialize;

/// A revision's date, `YYYY-MM-DD`, and where the session's was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Revision {
    pub date: Box<str>,
    pub from: RevisionFrom,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionFrom {
    /// The `protocolVersion` of the `initialize` result.
    Initialize,
    /// The `MCP-Protocol-Version` header of the session's requests.
    Header,
    /// Nothing said it: the revision the spec says to assume.
    Default,
}

impl RevisionFrom {
    pub fn name(self) -> &'static str {
        match self {
            RevisionFrom::Initialize => "initialize",
            RevisionFrom::Header => "header",
            RevisionFrom::Default => "default",
        }
    }
}

/// The revisions whose rules differ, oldest first.
pub const HTTP_SSE: &str = "2024-11-05";
pub const STREAMABLE_HTTP: &str = "2025-03-26";
pub const NO_BATCHING: &str = "2025-06-18";
/// From it the client names the revision in an `MCP-Protocol-Version` header on every request
/// after `initialize`.
pub const VERSION_HEADER: &str = "2025-06-18";
pub const PRIMING: &str = "2025-11-25";
pub const STATELESS: &str = "2026-07-28";

impl Revision {
    /// `date` when it is one (`YYYY-MM-DD`), else None.
    pub fn named(date: &str, from: RevisionFrom) -> Option<Revision> {
        is_date(date.trim()).then(|| Revision {
            date: date.trim().into(),
            from,
        })
    }

    /// What the spec says to assume when nothing names the revision.
    pub fn assumed(legacy: bool) -> Revision {
        Revision {
            date: if legacy { HTTP_SSE } else { STREAMABLE_HTTP }.into(),
            from: RevisionFrom::Default,
        }
    }

    /// The rules of `since` hold for this revision.
    pub fn at_least(&self, since: &str) -> bool {
        &*self.date >= since
    }

    /// A POST body may be a JSON array of messages: 2025-03-26 only.
    pub fn allows_batching(&self) -> bool {
        self.at_least(STREAMABLE_HTTP) && !self.at_least(NO_BATCHING)
    }

    /// Sessions (`Mcp-Session-Id`), the standalone GET stream, SSE event IDs and `Last-Event-ID`
    /// exist: every revision before 2026-07-28.
    pub fn has_sessions_and_resumption(&self) -> bool {
        !self.at_least(STATELESS)
    }

    /// A request ID may not be reused at all within the session (up to 2025-11-25), rather
    /// than only while the earlier request is in flight (2026-07-28).
    pub fn forbids_any_id_reuse(&self) -> bool {
        !self.at_least(STATELESS)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.date)
    }
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(date: &str) -> Revision {
        Revision::named(date, RevisionFrom::Initialize).unwrap()
    }

    #[test]
    fn each_rule_holds_from_its_revision() {
        assert!(!r("2024-11-05").allows_batching());
        assert!(r("2025-03-26").allows_batching());
        assert!(!r("2025-06-18").allows_batching());
        assert!(!r("2025-11-25").allows_batching());
        assert!(r("2025-11-25").has_sessions_and_resumption());
        assert!(!r("2026-07-28").has_sessions_and_resumption());
        assert!(r("2025-11-25").forbids_any_id_reuse());
        assert!(!r("2026-07-28").forbids_any_id_reuse());
    }

    #[test]
    fn an_unknown_date_takes_the_rules_of_the_newest_revision_before_it() {
        assert!(
            r("2025-04-01").allows_batching(),
            "after 2025-03-26, before 2025-06-18"
        );
        assert!(!r("2027-01-01").has_sessions_and_resumption());
    }

    #[test]
    fn only_a_date_names_a_revision_and_nothing_said_is_2025_03_26() {
        assert_eq!(Revision::named("latest", RevisionFrom::Header), None);
        assert_eq!(Revision::named("2025-6-18", RevisionFrom::Header), None);
        assert_eq!(
            Revision::named(" 2025-06-18 ", RevisionFrom::Header)
                .unwrap()
                .date
                .as_ref(),
            "2025-06-18"
        );
        assert_eq!(Revision::assumed(false).date.as_ref(), "2025-03-26");
        assert_eq!(Revision::assumed(true).date.as_ref(), "2024-11-05");
    }
}
