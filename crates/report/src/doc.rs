//! Questions the postmortem formats ask of a report [`Document`]: which sessions have findings,
//! the worst first, the verdict of each, the Wireshark filter of a finding, and the legs of a
//! session (one observation, or a client leg and a server leg tied by session ID and a measured
//! clock offset) for its sequence diagram.

use std::collections::HashMap;

use mcpf_detect::{Evidence, Severity};

use crate::document::{Document, Finding, Session, TimelineEntry};
use crate::markdown::{clock, mermaid};

/// A report document, indexed for the questions below: every question about a session is a
/// lookup, so a report of 100,000 sessions renders in time in proportion.
pub(crate) struct Doc<'a> {
    doc: &'a Document,
    findings_by_id: HashMap<&'a str, &'a Finding>,
    findings_by_session: HashMap<&'a str, Vec<&'a Finding>>,
    timeline_by_session: HashMap<&'a str, Vec<&'a TimelineEntry>>,
    sessions_by_key: HashMap<&'a str, &'a Session>,
    /// Which inputs are packet captures, by index: a HAR's or a log's "frames" are its entries
    /// or lines, which no Wireshark filter selects.
    captures: Vec<bool>,
}

/// A session's verdict line.
pub(crate) struct VerdictLine {
    pub session: String,
    pub severity: Severity,
    pub text: String,
}

impl<'a> Doc<'a> {
    pub(crate) fn new(doc: &'a Document) -> Self {
        let mut findings_by_session: HashMap<&str, Vec<&Finding>> = HashMap::new();
        for f in &doc.findings {
            findings_by_session.entry(&f.session).or_default().push(f);
        }
        let mut timeline_by_session: HashMap<&str, Vec<&TimelineEntry>> = HashMap::new();
        for e in &doc.timeline {
            timeline_by_session.entry(&e.session).or_default().push(e);
        }
        Doc {
            doc,
            findings_by_id: doc.findings.iter().map(|f| (f.id.as_str(), f)).collect(),
            findings_by_session,
            timeline_by_session,
            sessions_by_key: doc.sessions.iter().map(|s| (s.key.as_str(), s)).collect(),
            captures: doc.inputs.iter().map(|i| i.format.is_capture()).collect(),
        }
    }

    /// The inputs' paths, in input order.
    /// What input `i`'s record numbers count.
    pub(crate) fn unit(&self, i: u64) -> mcpf_model::RecordUnit {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.doc.inputs.get(i))
            .map_or(mcpf_model::RecordUnit::Frame, |x| x.format.unit())
    }

    pub(crate) fn inputs(&self) -> impl Iterator<Item = &'a str> {
        self.doc.inputs.iter().map(|i| i.path.as_str())
    }

    pub(crate) fn sessions(&self) -> impl Iterator<Item = &'a Session> {
        self.doc.sessions.iter()
    }

    pub(crate) fn findings_of(&self, key: &str) -> impl Iterator<Item = &'a Finding> + '_ {
        self.findings_by_session
            .get(key)
            .into_iter()
            .flatten()
            .copied()
    }

    /// A session's findings, the worst first, then by time.
    pub(crate) fn worst_first(&self, key: &str) -> Vec<&'a Finding> {
        let mut v: Vec<&Finding> = self.findings_of(key).collect();
        v.sort_by(|a, b| (a.rank(), &a.time).cmp(&(b.rank(), &b.time)));
        v
    }

    pub(crate) fn timeline_of(&self, key: &str) -> impl Iterator<Item = &'a TimelineEntry> + '_ {
        self.timeline_by_session
            .get(key)
            .into_iter()
            .flatten()
            .copied()
    }

    /// Sessions with a finding above info.
    pub(crate) fn sessions_with_findings(&self) -> Vec<&'a Session> {
        self.sessions()
            .filter(|s| self.findings_of(&s.key).any(above_info))
            .collect()
    }

    /// One line per session with a finding above info, the worst sessions first.
    pub(crate) fn verdicts(&self) -> Vec<VerdictLine> {
        let mut lines: Vec<VerdictLine> = self
            .sessions_with_findings()
            .into_iter()
            .filter_map(|s| {
                let worst = *self.worst_first(&s.key).first()?;
                Some(VerdictLine {
                    session: s.key.clone(),
                    severity: worst.rank(),
                    text: self.verdict_text(s, worst),
                })
            })
            .collect();
        lines.sort_by_key(|l| l.severity);
        lines
    }

    fn verdict_text(&self, s: &Session, worst: &'a Finding) -> String {
        let root = self.root_cause(worst);
        let since =
            (!std::ptr::eq(root, worst)).then(|| (clock(&root.time), root.kind.name().to_string()));
        let hung = self.findings_of(&s.key).find_map(|u| {
            let Some(Evidence::UnansweredRequest(e)) = &u.evidence else {
                return None;
            };
            (!std::ptr::eq(u, worst) && above_info(u)).then(|| (hung_request(e), u.id.clone()))
        });
        verdict_sentence(&Verdict {
            session_id: s.session_id.as_deref(),
            at: clock(&worst.time),
            since,
            summary: &worst.summary,
            id: &worst.id,
            kind: worst.kind.name(),
            hung,
        })
    }

    /// What the verdict says when no finding is above info: that no MCP session was found
    /// (nothing was analysed, which is no clean result), or which sessions were checked.
    pub(crate) fn nothing_above_info(&self) -> String {
        let keys: Vec<String> = self
            .sessions()
            .map(|s| match &s.session_id {
                Some(id) => format!("{} ({})", s.key, mcpf_mcp::model::short_id(id)),
                None => s.key.clone(),
            })
            .collect();
        const NAMED: usize = 20;
        match keys.len() {
            0 => "No MCP session found in the inputs: nothing was analysed, so this is not a clean result (the terminal report and its warnings say what the inputs held instead).".into(),
            n => {
                let more = n.saturating_sub(NAMED);
                let mut named = keys.into_iter().take(NAMED).collect::<Vec<_>>().join(", ");
                if more > 0 {
                    named.push_str(&format!(" and {more} more"));
                }
                format!(
                    "No finding above info in the {n} session{} checked: {named}.",
                    if n == 1 { "" } else { "s" }
                )
            }
        }
    }

    /// What to do about a session's incident: the fix of its worst finding's first cause, and
    /// the command that explains it.
    pub(crate) fn what_to_do(&self, key: &str) -> Option<(String, &'static str)> {
        let worst = *self.worst_first(key).first()?;
        if !above_info(worst) {
            return None;
        }
        match self.root_cause(worst).kind {
            crate::document::Kind::Known(k) => Some((k.name().to_string(), k.info().fix)),
            crate::document::Kind::Unknown(_) => None,
        }
    }

    /// The first cause of a finding, following `caused_by` (bounded: the IDs come from a file).
    fn root_cause(&self, mut f: &'a Finding) -> &'a Finding {
        for _ in 0..self.findings_by_id.len() {
            let cause = f
                .caused_by
                .first()
                .and_then(|c| self.findings_by_id.get(c.as_str()));
            match cause {
                Some(c) => f = c,
                None => break,
            }
        }
        f
    }

    /// The Wireshark display filter for a finding's frames, its other vantage points' included:
    /// `frame.number in {…}`, per input (named by its label) when they are in several.
    pub(crate) fn display_filter(&self, f: &Finding) -> Option<String> {
        let captures = &self.captures;
        let refs = f
            .frame_refs
            .iter()
            .chain(f.seen_at.iter().flat_map(|v| v.frame_refs.iter()))
            .map(|r| (r.input, r.frame))
            .filter(|(i, _)| captures.get(*i as usize).copied().unwrap_or(true));
        let filters = display_filters(refs);
        // With several inputs a filter says which file it selects frames of (a frame number
        // names a frame of one file only), by the input's label the header shows.
        let labelled = self.inputs().count() > 1;
        let parts: Vec<String> = filters
            .iter()
            .map(|(i, filter)| match labelled {
                true => format!("{}: {filter}", crate::input_label(*i as u32)),
                false => filter.clone(),
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// The records of a finding's evidence in inputs that are not captures (no display filter
    /// selects them): `lines 16, 17`, `entry 3`, per input when there are several.
    pub(crate) fn other_records(&self, f: &Finding) -> Option<String> {
        let captures = &self.captures;
        let refs = f
            .frame_refs
            .iter()
            .chain(f.seen_at.iter().flat_map(|v| v.frame_refs.iter()))
            .filter(|r| !captures.get(r.input as usize).copied().unwrap_or(true))
            .map(|r| (u32::try_from(r.input).unwrap_or(u32::MAX), r.frame));
        let text = crate::analyze::frames_text(refs, self.inputs().count() > 1, &|i| {
            self.unit(u64::from(i))
        });
        (!text.is_empty()).then_some(text)
    }

    /// Where a timeline row's record is: `114` (a frame), `line 16`, `I2:entry 3`.
    pub(crate) fn record_ref(&self, input: u64, number: u64) -> String {
        let unit = self.unit(input);
        let num = match self.inputs().count() > 1 {
            true => format!("{}:{number}", crate::input_label(input as u32)),
            false => number.to_string(),
        };
        match unit {
            mcpf_model::RecordUnit::Frame => num,
            other => format!("{} {num}", other.word(false)),
        }
    }

    /// What a session's sequence diagram draws: the session alone, or the client leg and the
    /// server leg of it when both are in the report and their clocks were related. `None` for
    /// the server leg of a pair (drawn with its client leg) and for a session with no timeline.
    pub(crate) fn legs(&self, s: &'a Session) -> Option<Legs<'a>> {
        self.timeline_of(&s.key).next()?;
        let twin = s
            .same_session_as
            .iter()
            .find_map(|k| self.sessions_by_key.get(k.as_str()).copied());
        let Some(twin) = twin else {
            return Some(Legs::One(s));
        };
        let input = |x: &Session| -> Option<usize> {
            let path = x.sources.first()?;
            self.inputs().position(|p| p == path)
        };
        let offset = self.doc.summary.clock_offsets.iter().find_map(|c| {
            let estimate = c.estimate?;
            Some((c.far_input, c.near_input, estimate))
        });
        match (offset, input(s), input(twin)) {
            (Some((far, near, est)), Some(mine), Some(theirs)) if mine == near && theirs == far => {
                Some(Legs::Two {
                    near: s,
                    far: twin,
                    offset_s: est,
                })
            }
            (Some((far, near, _)), Some(mine), Some(theirs)) if mine == far && theirs == near => {
                None
            }
            _ => Some(Legs::One(s)),
        }
    }
}

/// A finding above info.
fn above_info(f: &Finding) -> bool {
    f.rank() < Severity::Info
}

/// Wireshark display filters selecting frames, one per input in input order:
/// `frame.number in {114, 142, 148, 152}` (frame 0, unknown, left out).
pub(crate) fn display_filters(refs: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, String)> {
    let mut by_input: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for (input, frame) in refs.filter(|&(_, f)| f > 0) {
        by_input.entry(input).or_default().push(frame);
    }
    by_input
        .into_iter()
        .map(|(input, mut frames)| {
            frames.sort_unstable();
            frames.dedup();
            let list: Vec<String> = frames.iter().map(u64::to_string).collect();
            (input, format!("frame.number in {{{}}}", list.join(", ")))
        })
        .collect()
}

/// What a verdict line says.
pub(crate) struct Verdict<'a> {
    pub session_id: Option<&'a str>,
    /// When the worst finding happened, and its first cause when it has one (time, kind).
    pub at: String,
    pub since: Option<(String, String)>,
    pub summary: &'a str,
    pub id: &'a str,
    pub kind: &'a str,
    /// The request the session left hanging (in words) and its finding's ID.
    pub hung: Option<(String, String)>,
}

/// `session 2665…92a9 since 04:36:07.294 (sse_fallback): resume with … (F5
/// cross_namespace_replay); request 7 tools/call "reindex" never answered (F8)`.
pub(crate) fn verdict_sentence(v: &Verdict<'_>) -> String {
    let since = match &v.since {
        Some((time, kind)) => format!("since {time} ({kind})"),
        None => format!("at {}", v.at),
    };
    let id = v
        .session_id
        .map(|i| format!("session {} ", mcpf_mcp::model::short_id(i)))
        .unwrap_or_default();
    let mut text = format!("{id}{since}: {} ({} {})", v.summary, v.id, v.kind);
    if let Some((what, id)) = &v.hung {
        text.push_str(&format!("; {what} ({id})"));
    }
    text
}

/// `request 7 tools/call "reindex" never answered`, from an `unanswered_request`'s evidence.
pub(crate) fn hung_request(e: &mcpf_detect::evidence::UnansweredRequest) -> String {
    let method = e.method.as_deref().unwrap_or("request");
    match &e.tool {
        Some(t) => format!(
            "request {} {method} \"{t}\" never answered",
            e.request_id.json()
        ),
        None => format!("request {} {method} never answered", e.request_id.json()),
    }
}

/// The observations a sequence diagram draws.
pub(crate) enum Legs<'a> {
    One(&'a Session),
    /// The client leg (`near`) and the server leg (`far`, whose clock reads `offset_s` ahead).
    Two {
        near: &'a Session,
        far: &'a Session,
        offset_s: f64,
    },
}

/// One line of a sequence diagram.
pub(crate) struct Row {
    /// Seconds since 1970 on the near clock, for the order of both legs.
    at: f64,
    line: String,
}

impl Row {
    pub(crate) fn mermaid(&self) -> &str {
        &self.line
    }
}

/// Words per message at most: a diagram is read at a glance.
const MESSAGE_CHARS: usize = 90;

impl<'a> Legs<'a> {
    pub(crate) fn title(&self) -> String {
        match self {
            Legs::One(s) => s.key.clone(),
            Legs::Two { near, far, .. } => {
                format!("{} client leg, {} server leg", near.key, far.key)
            }
        }
    }

    pub(crate) fn participants(&self) -> Vec<(&'static str, String)> {
        let client = |s: &Session| format!("client {}", s.client);
        let server = |s: &Session| format!("server {}{}", s.server, s.endpoint);
        match self {
            Legs::One(s) => vec![("C", client(s)), ("S", server(s))],
            Legs::Two { near, far, .. } => vec![
                ("C", client(near)),
                ("P", format!("proxy {}", near.server)),
                ("S", server(far)),
            ],
        }
    }

    /// The participants a note spans to cover the whole diagram.
    pub(crate) fn span(&self) -> (&'static str, &'static str) {
        ("C", "S")
    }

    pub(crate) fn rows(&self, d: &Doc<'a>) -> Vec<Row> {
        let mut rows = Vec::new();
        match self {
            Legs::One(s) => rows.extend(leg_rows(d, s, ("C", "S"), 0.0)),
            Legs::Two {
                near,
                far,
                offset_s,
            } => {
                rows.extend(leg_rows(d, near, ("C", "P"), 0.0));
                rows.extend(leg_rows(d, far, ("P", "S"), *offset_s));
            }
        }
        rows.sort_by(|a, b| a.at.total_cmp(&b.at));
        rows
    }
}

/// The rows of one observation between `(client, server)`, its times moved back by `offset_s`.
fn leg_rows(d: &Doc<'_>, s: &Session, (c, srv): (&str, &str), offset_s: f64) -> Vec<Row> {
    d.timeline_of(&s.key)
        .map(|e| {
            let summary = e.summary.as_str();
            let line = match e.direction.as_str() {
                "c→s" => format!("{c}->>{srv}: {}", message(summary)),
                "s→c" => format!("{srv}-->>{c}: {}", message(summary)),
                "c ✕" => format!("{c}-x{srv}: {}", message(summary)),
                "s ✕" => format!("{srv}-x{c}: {}", message(summary)),
                _ => {
                    let head = summary.split(':').next().unwrap_or(summary);
                    let ids = mermaid(&e.findings.join(","));
                    format!("Note over {c},{srv}: {ids} {}", message(head))
                }
            };
            Row {
                at: seconds(&e.time) - offset_s,
                line,
            }
        })
        .collect()
}

fn message(text: &str) -> String {
    mermaid(&crate::table::shorten(text.trim(), MESSAGE_CHARS))
}

/// Seconds since 1970 of an RFC 3339 UTC time, to place marks (a session may cross midnight).
pub(crate) fn seconds(t: &str) -> f64 {
    let num = |r: std::ops::Range<usize>| t.get(r).and_then(|x| x.parse::<i64>().ok());
    let day = match (num(0..4), num(5..7), num(8..10)) {
        (Some(y), Some(m), Some(d)) => days_from_civil(y, m, d) as f64 * 86_400.0,
        _ => 0.0,
    };
    let secs = t.get(17..).map(|x| x.trim_end_matches('Z'));
    match (
        num(11..13),
        num(14..16),
        secs.and_then(|x| x.parse::<f64>().ok()),
    ) {
        (Some(h), Some(m), Some(s)) => day + (h * 3600 + m * 60) as f64 + s,
        _ => day,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the civil-from-days inverse).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 27: the verdict follows `caused_by` and names the hung request from findings read
    /// as types, not from the evidence's JSON by key.
    #[test]
    fn the_verdict_follows_causes_and_names_the_hung_request_from_types() {
        let evidence = r#"{"request_id": "7", "method": "tools/call", "tool": "reindex",
            "waited_s": 12.5, "sent": {"stream": "post:s3", "exchange": "tcp0#3",
            "time": "2026-11-30T04:36:05.791468Z", "frame": 10},
            "until": "2026-11-30T04:36:18.355660Z", "last_progress": null,
            "client_gave_up": true, "session_went_on": true, "still_open_at_capture_end": false,
            "answer_may_be_in_missing_bytes": false, "cause": {"kind": "never_answered"}}"#;
        let json = format!(
            r#"{{"sessions": [{{"key": "S1", "session_id": "2665c7c69224c221fa665378ef4692a9"}}],
            "findings": [
              {{"id": "F1", "kind": "sse_fallback", "severity": "info", "session": "S1",
                "time": "2026-11-30T04:36:07.294714Z", "caused_by": ["F2"]}},
              {{"id": "F2", "kind": "cross_namespace_replay", "severity": "critical",
                "session": "S1", "time": "2026-11-30T04:36:14.298347Z", "summary": "replayed",
                "caused_by": ["F1"]}},
              {{"id": "F3", "kind": "unanswered_request", "severity": "high", "session": "S1",
                "time": "2026-11-30T04:36:18.355660Z", "evidence": {evidence}}}
            ]}}"#
        );
        let doc = Document::from_json(json.as_bytes()).unwrap();
        assert!(matches!(
            doc.findings[2].evidence,
            Some(Evidence::UnansweredRequest(_))
        ));
        let lines = Doc::new(&doc).verdicts();
        let [line] = &lines[..] else {
            panic!("one session with findings")
        };
        assert_eq!(line.severity, Severity::Critical);
        // F2 ← F1 ← F2 is a cycle (the file is untrusted): followed as many steps as there are
        // findings, three, it ends at F1.
        assert_eq!(
            line.text,
            "session 2665…92a9 since 04:36:07.294 (sse_fallback): replayed \
             (F2 cross_namespace_replay); request \"7\" tools/call \"reindex\" never answered (F3)"
        );
    }
}
