//! Questions the postmortem formats ask of a JSON report document: which sessions have
//! findings, the worst first, the verdict of each, the Wireshark filter of a finding, and the
//! legs of a session (one observation, or a client leg and a server leg tied by session ID and
//! a measured clock offset) for its sequence diagram.

use std::collections::HashMap;

use serde_json::Value;

use crate::markdown::{clock, mermaid};

/// Severities, worst first, as the document names them.
const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

fn rank(f: &Value) -> usize {
    let s = f["severity"].as_str().unwrap_or("info");
    SEVERITIES.iter().position(|x| *x == s).unwrap_or(4)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// A JSON report document, indexed for the questions below: every question about a session is
/// a lookup, so a report of 100,000 sessions renders in time in proportion.
pub(crate) struct Doc<'a> {
    doc: &'a Value,
    findings_by_id: HashMap<&'a str, &'a Value>,
    findings_by_session: HashMap<&'a str, Vec<&'a Value>>,
    timeline_by_session: HashMap<&'a str, Vec<&'a Value>>,
    sessions_by_key: HashMap<&'a str, &'a Value>,
    /// Which inputs are packet captures, by index: a HAR's or a log's "frames" are its entries
    /// or lines, which no Wireshark filter selects.
    captures: Vec<bool>,
}

/// The elements of a document's list by their `session`, in order.
fn by_session(list: &Value) -> HashMap<&str, Vec<&Value>> {
    let mut map: HashMap<&str, Vec<&Value>> = HashMap::new();
    for x in list.as_array().into_iter().flatten() {
        map.entry(text(x, "session")).or_default().push(x);
    }
    map
}

/// A session's verdict line.
pub(crate) struct VerdictLine {
    pub session: String,
    pub severity: String,
    pub text: String,
}

impl<'a> Doc<'a> {
    pub(crate) fn new(doc: &'a Value) -> Self {
        let findings_by_id = doc["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| (text(f, "id"), f))
            .collect();
        Doc {
            doc,
            findings_by_id,
            findings_by_session: by_session(&doc["findings"]),
            timeline_by_session: by_session(&doc["timeline"]),
            sessions_by_key: doc["sessions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| (text(s, "key"), s))
                .collect(),
            captures: doc["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| text(i, "format").starts_with("pcap"))
                .collect(),
        }
    }

    pub(crate) fn inputs(&self) -> impl Iterator<Item = &'a str> {
        let inputs = &self.doc["inputs"];
        inputs
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| text(i, "path"))
    }

    pub(crate) fn sessions(&self) -> impl Iterator<Item = &'a Value> {
        let sessions = &self.doc["sessions"];
        sessions.as_array().into_iter().flatten()
    }

    pub(crate) fn key(&self, s: &'a Value) -> &'a str {
        text(s, "key")
    }

    pub(crate) fn findings_of(&self, key: &str) -> impl Iterator<Item = &'a Value> + '_ {
        self.findings_by_session
            .get(key)
            .into_iter()
            .flatten()
            .copied()
    }

    /// A session's findings, the worst first, then by time.
    pub(crate) fn worst_first(&self, key: &'a str) -> Vec<&'a Value> {
        let mut v: Vec<&Value> = self.findings_of(key).collect();
        v.sort_by(|a, b| (rank(a), text(a, "time")).cmp(&(rank(b), text(b, "time"))));
        v
    }

    pub(crate) fn timeline_of(&self, key: &str) -> impl Iterator<Item = &'a Value> + '_ {
        self.timeline_by_session
            .get(key)
            .into_iter()
            .flatten()
            .copied()
    }

    /// Sessions with a finding above info.
    pub(crate) fn sessions_with_findings(&self) -> Vec<&'a Value> {
        self.sessions()
            .filter(|s| self.findings_of(self.key(s)).any(|f| rank(f) < 4))
            .collect()
    }

    /// One line per session with a finding above info, the worst sessions first.
    pub(crate) fn verdicts(&self) -> Vec<VerdictLine> {
        let mut lines: Vec<(usize, VerdictLine)> = self
            .sessions_with_findings()
            .into_iter()
            .filter_map(|s| {
                let key = self.key(s);
                let worst = *self.worst_first(key).first()?;
                let line = VerdictLine {
                    session: key.to_string(),
                    severity: text(worst, "severity").to_string(),
                    text: self.verdict_text(s, worst),
                };
                Some((rank(worst), line))
            })
            .collect();
        lines.sort_by_key(|(r, _)| *r);
        lines.into_iter().map(|(_, l)| l).collect()
    }

    fn verdict_text(&self, s: &Value, worst: &'a Value) -> String {
        let root = self.root_cause(worst);
        let since = (!std::ptr::eq(root, worst))
            .then(|| (clock(text(root, "time")), text(root, "kind").to_string()));
        let hung = self
            .findings_of(self.key(s))
            .find(|u| {
                !std::ptr::eq(*u, worst) && text(u, "kind") == "unanswered_request" && rank(u) < 4
            })
            .map(|u| {
                (
                    hung_request_saved(&u["evidence"]),
                    text(u, "id").to_string(),
                )
            });
        verdict_sentence(&Verdict {
            session_id: s["session_id"].as_str(),
            at: clock(text(worst, "time")),
            since,
            summary: text(worst, "summary"),
            id: text(worst, "id"),
            kind: text(worst, "kind"),
            hung,
        })
    }

    /// The first cause of a finding, following `caused_by` (bounded: the IDs come from a file).
    fn root_cause(&self, mut f: &'a Value) -> &'a Value {
        for _ in 0..self.findings_by_id.len() {
            let cause = f["caused_by"][0]
                .as_str()
                .and_then(|c| self.findings_by_id.get(c));
            match cause {
                Some(c) => f = c,
                None => break,
            }
        }
        f
    }

    /// The Wireshark display filter for a finding's frames: `frame.number in {…}`, per input
    /// (named by its path) when they are in several.
    pub(crate) fn display_filter(&self, f: &Value) -> Option<String> {
        let captures = &self.captures;
        let refs = f["frame_refs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r["input"].as_u64()?, r["frame"].as_u64()?)))
            .filter(|(i, _)| captures.get(*i as usize).copied().unwrap_or(true));
        let filters = display_filters(refs);
        match filters.as_slice() {
            [] => None,
            [(_, one)] => Some(one.clone()),
            several => {
                let paths: Vec<&str> = self.inputs().collect();
                let parts: Vec<String> = several
                    .iter()
                    .map(|(i, filter)| {
                        let path = paths.get(*i as usize).copied().unwrap_or("?");
                        format!("{path}: {filter}")
                    })
                    .collect();
                Some(parts.join("; "))
            }
        }
    }

    /// What a session's sequence diagram draws: the session alone, or the client leg and the
    /// server leg of it when both are in the report and their clocks were related. `None` for
    /// the server leg of a pair (drawn with its client leg) and for a session with no timeline.
    pub(crate) fn legs(&self, s: &'a Value) -> Option<Legs<'a>> {
        self.timeline_of(self.key(s)).next()?;
        let twin = s["same_session_as"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|k| self.sessions_by_key.get(k).copied());
        let Some(twin) = twin else {
            return Some(Legs::One(s));
        };
        let input = |x: &Value| -> Option<usize> {
            let path = x["sources"][0].as_str()?;
            self.inputs().position(|p| p == path)
        };
        let offsets = self.doc["summary"]["clock_offsets"].as_array();
        let offset = offsets.into_iter().flatten().find_map(|c| {
            let (far, near) = (c["far_input"].as_u64()?, c["near_input"].as_u64()?);
            let estimate = c["estimate"].as_f64()?;
            Some((far as usize, near as usize, estimate))
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

/// The IDs of the findings a timeline entry places.
pub(crate) fn entry_findings(e: &Value) -> Vec<&str> {
    e["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
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

/// The same, from the evidence of a saved report.
pub(crate) fn hung_request_saved(e: &Value) -> String {
    let id = match &e["request_id"] {
        Value::String(s) => format!("\"{s}\""),
        v => v.to_string(),
    };
    let method = e["method"].as_str().unwrap_or("request");
    match e["tool"].as_str() {
        Some(t) => format!("request {id} {method} \"{t}\" never answered"),
        None => format!("request {id} {method} never answered"),
    }
}

/// The observations a sequence diagram draws.
pub(crate) enum Legs<'a> {
    One(&'a Value),
    /// The client leg (`near`) and the server leg (`far`, whose clock reads `offset_s` ahead).
    Two {
        near: &'a Value,
        far: &'a Value,
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
            Legs::One(s) => text(s, "key").to_string(),
            Legs::Two { near, far, .. } => {
                format!(
                    "{} client leg, {} server leg",
                    text(near, "key"),
                    text(far, "key")
                )
            }
        }
    }

    pub(crate) fn participants(&self) -> Vec<(&'static str, String)> {
        let client = |s: &Value| format!("client {}", text(s, "client"));
        let server = |s: &Value| format!("server {}{}", text(s, "server"), text(s, "endpoint"));
        match self {
            Legs::One(s) => vec![("C", client(s)), ("S", server(s))],
            Legs::Two { near, far, .. } => vec![
                ("C", client(near)),
                ("P", format!("proxy {}", text(near, "server"))),
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
fn leg_rows<'a>(d: &Doc<'a>, s: &'a Value, (c, srv): (&str, &str), offset_s: f64) -> Vec<Row> {
    d.timeline_of(text(s, "key"))
        .map(|e| {
            let summary = text(e, "summary");
            let line = match text(e, "direction") {
                "c→s" => format!("{c}->>{srv}: {}", message(summary)),
                "s→c" => format!("{srv}-->>{c}: {}", message(summary)),
                "c ✕" => format!("{c}-x{srv}: {}", message(summary)),
                "s ✕" => format!("{srv}-x{c}: {}", message(summary)),
                _ => {
                    let head = summary.split(':').next().unwrap_or(summary);
                    let ids = mermaid(&entry_findings(e).join(","));
                    format!("Note over {c},{srv}: {ids} {}", message(head))
                }
            };
            Row {
                at: seconds(text(e, "time")) - offset_s,
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
