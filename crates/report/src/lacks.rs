//! Why a session's findings are not determinable, in words: the reason each [`Lack`] of a
//! session is given under `not_determinable` (JSON) and in the table.

use mcpf_mcp::model::Lack;

/// The reason a lack leaves findings not determinable.
pub(crate) fn reason(lack: &Lack) -> String {
    match lack {
        Lack::Bodies {
            missing,
            not_decoded,
            exchanges,
        } => bodies(*missing, *not_decoded, *exchanges),
        Lack::Events { unheld } => format!(
            "{unheld} events arrived after the session held as many as the cap allows (--max-session-events); they were counted, not kept"
        ),
        Lack::Exchanges { unheld } => format!(
            "{unheld} exchanges came after the session held as many as the cap allows (--max-session-exchanges); they were counted, not kept"
        ),
        Lack::ResponseSessionId => {
            "the input did not record the responses' Mcp-Session-Id".to_string()
        }
        Lack::ResponseEnds {
            post,
            within_ns,
            get,
        } => format!(
            "{post} (logged as complete) ended within {} of the start of {get}, but so did other exchanges of the session: the log's times cannot tell a POST dropped for the GET from one that had ended",
            resolution(*within_ns)
        ),
    }
}

/// Bodies not recorded, or not decoded.
fn bodies(missing: usize, not_decoded: usize, total: usize) -> String {
    match missing - not_decoded.min(missing) {
        0 => format!(
            "the content coding of {not_decoded} of {total} exchanges' bodies could not be undone"
        ),
        n if not_decoded == 0 => {
            format!("the input recorded no body or SSE events for {n} of {total} exchanges")
        }
        n => format!(
            "the input recorded no body or SSE events for {n} of {total} exchanges, and the content coding of {not_decoded} more could not be undone"
        ),
    }
}

/// A log's time resolution: `1 s`, `5 ms`.
fn resolution(ns: i64) -> String {
    if ns >= 1_000_000_000 {
        format!("{} s", ns / 1_000_000_000)
    } else {
        format!("{} ms", (ns / 1_000_000).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_say_what_was_lacking() {
        let bodies = |missing, not_decoded| Lack::Bodies {
            missing,
            not_decoded,
            exchanges: 9,
        };
        assert_eq!(
            reason(&bodies(2, 0)),
            "the input recorded no body or SSE events for 2 of 9 exchanges"
        );
        assert_eq!(
            reason(&bodies(2, 2)),
            "the content coding of 2 of 9 exchanges' bodies could not be undone"
        );
        assert!(
            reason(&bodies(3, 1)).ends_with("and the content coding of 1 more could not be undone")
        );
        let ends = Lack::ResponseEnds {
            post: "post:s3".into(),
            within_ns: 1_000_000_000,
            get: "get:s4".into(),
        };
        assert!(
            reason(&ends).starts_with(
                "post:s3 (logged as complete) ended within 1 s of the start of get:s4"
            )
        );
    }
}
