//! The incident timeline of a session: requests with their answers, fallbacks, streams opened
//! and cut, runs of events condensed, resumes, and every finding placed at its time.

use mcpf_detect::Finding;
use mcpf_mcp::jsonrpc::{Kind, Message, RequestId};
use mcpf_mcp::model::{Namespace, Session, Stream, StreamTransport};
use mcpf_model::Mark;

#[derive(Clone, Debug)]
pub struct Entry {
    pub time: Mark,
    pub session: usize,
    pub stream: Option<String>,
    /// `c→s`, `s→c`, `c ✕` (the client cut), `s ✕` (the server cut), `▲` (a finding).
    pub arrow: &'static str,
    pub kind: &'static str,
    pub text: String,
    /// Positions of findings placed here.
    pub findings: Vec<usize>,
    pub request_ids: Vec<RequestId>,
    pub event_ids: Option<(String, String)>,
    pub frames: Vec<Mark>,
}

/// Event IDs as a person scans them: long opaque IDs keep their head and tail.
pub fn short_event_id(id: &str) -> String {
    let n = id.chars().count();
    if n <= 18 {
        return id.to_string();
    }
    let head: String = id.chars().take(8).collect();
    let tail: String = id.chars().skip(n - 8).collect();
    format!("{head}…{tail}")
}

fn request_text(m: &Message) -> String {
    let mut t = m.method.as_deref().unwrap_or("?").to_string();
    if let Some(id) = &m.id {
        t.push_str(&format!(" #{}", id.label()));
    }
    if let Some(tool) = &m.mcp.tool {
        t.push_str(&format!(" {tool}"));
    }
    t
}

fn response_kind(st: &Stream) -> String {
    match (st.status, st.event_stream, st.content_type.as_deref()) {
        (None, _, _) => "(no response bytes)".into(),
        (Some(c), true, _) => format!("→ {c} SSE"),
        (Some(c), false, Some(ct)) if ct.contains("json") => format!("→ {c} JSON"),
        (Some(c), _, _) => format!("→ {c}"),
    }
}

/// Who ended a stream, in words, when it did not end by its own framing.
fn cut_text(st: &Stream) -> Option<(&'static str, String)> {
    use mcpf_http::Outcome;
    use mcpf_model::Direction;
    let after = st
        .last_delivered_id()
        .map(|i| format!(" after event {}", short_event_id(i)))
        .unwrap_or_default();
    match (st.outcome, st.closed_by) {
        (Some(Outcome::Complete), _) | (None, _) => None,
        (Some(Outcome::Reset), Some(Direction::ClientToServer)) => {
            Some(("c ✕", format!("{} reset by the client{after}", st.label())))
        }
        (Some(Outcome::Reset), _) => {
            Some(("s ✕", format!("{} reset by the server{after}", st.label())))
        }
        (Some(Outcome::ClosedEarly), Some(Direction::ClientToServer)) => {
            Some(("c ✕", format!("client closed {}{after}", st.label())))
        }
        (Some(Outcome::ClosedEarly), _) => {
            Some(("s ✕", format!("server closed {}{after}", st.label())))
        }
        (Some(Outcome::CutByCaptureEnd), _) => Some((
            "…",
            format!("{} still open at capture end{after}", st.label()),
        )),
        (Some(Outcome::Gap), _) => Some((
            "…",
            format!("{} has bytes missing from the capture", st.label()),
        )),
        (Some(Outcome::Idle), _) => Some(("…", format!("{} idle, evicted", st.label()))),
    }
}

fn summarize_messages(msgs: &[&Message]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for m in msgs {
        let key = match m.kind {
            Kind::Notification => {
                let for_req = m
                    .mcp
                    .progress_token
                    .as_ref()
                    .map(|t| format!(" (token {})", t.trim_matches('"')))
                    .unwrap_or_default();
                format!("{}{for_req}", m.method.as_deref().unwrap_or("?"))
            }
            Kind::Request => format!("server request {}", m.method.as_deref().unwrap_or("?")),
            Kind::Response | Kind::Error => format!(
                "response #{}",
                m.id.as_ref().map(|i| i.label()).unwrap_or_default()
            ),
            Kind::Malformed => "malformed".into(),
        };
        match counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => counts.push((key, 1)),
        }
    }
    counts
        .into_iter()
        .map(|(k, n)| if n > 1 { format!("{n} × {k}") } else { k })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds the timeline of one session. `all_events` keeps one row per event instead of runs.
pub fn build(s: &Session, findings: &[(usize, &Finding)], all_events: bool) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    // Events findings point at get a row of their own, so the finding sits on the right line.
    let flagged: Vec<Mark> = findings
        .iter()
        .flat_map(|(_, f)| f.frames.iter().copied())
        .collect();
    for st in &s.streams {
        let requests: Vec<&Message> = st.requests().collect();
        let notes: Vec<&Message> = st
            .client_messages
            .iter()
            .filter(|m| m.kind != Kind::Request)
            .collect();
        let label = st.label();
        // Answered on its own stream, quickly and quietly: one row.
        let own_answer: Vec<&Message> = st
            .events
            .iter()
            .flat_map(|e| e.messages.iter())
            .chain(st.response_messages.iter())
            .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
            .collect();
        let mut text = match (st.method.as_str(), requests.first()) {
            (_, Some(_)) => format!(
                "{} {}",
                st.method,
                requests
                    .iter()
                    .map(|m| request_text(m))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ("GET", None) => {
                let what = match (&st.resume, st.transport) {
                    (Some(r), _) => format!(
                        "Last-Event-ID: {} (resume)",
                        short_event_id(&r.last_event_id)
                    ),
                    (None, StreamTransport::LegacySse) => "(legacy SSE transport)".into(),
                    (None, _) => {
                        if s.fallbacks.iter().any(|f| f.to_stream == st.idx) {
                            "(fallback stream)".into()
                        } else {
                            "(standalone stream)".into()
                        }
                    }
                };
                format!("GET {} {what}", st.target)
            }
            (m, None) if !notes.is_empty() => format!(
                "{m} {}",
                notes
                    .iter()
                    .map(|n| n
                        .method
                        .as_deref()
                        .map(str::to_string)
                        .unwrap_or_else(|| n.summary()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (m, None) => format!("{m} {}", st.target),
        };
        text.push_str(&format!("  {}", response_kind(st)));
        if !own_answer.is_empty() && !requests.is_empty() {
            let all_answered = requests
                .iter()
                .all(|r| own_answer.iter().any(|a| a.id.is_some() && a.id == r.id));
            if all_answered {
                text.push_str(if own_answer.iter().any(|a| a.kind == Kind::Error) {
                    ", error"
                } else {
                    ", answered"
                });
            }
        }
        out.push(Entry {
            time: st.opened,
            session: s.idx,
            stream: Some(label.clone()),
            arrow: "c→s",
            kind: if st.resume.is_some() {
                "resume"
            } else {
                "request"
            },
            text,
            findings: Vec::new(),
            request_ids: requests.iter().filter_map(|m| m.id.clone()).collect(),
            event_ids: None,
            frames: vec![st.opened],
        });
        // Events: runs per stream, broken where a finding points or by a response.
        let mut run: Vec<usize> = Vec::new();
        let flush = |run: &mut Vec<usize>, out: &mut Vec<Entry>| {
            if run.is_empty() {
                return;
            }
            let first = &st.events[run[0]];
            let last = &st.events[*run.last().unwrap_or(&run[0])];
            let msgs: Vec<&Message> = run
                .iter()
                .flat_map(|&i| st.events[i].messages.iter())
                .collect();
            let primings = run.iter().filter(|&&i| st.events[i].priming).count();
            let ids = match (first.id.as_deref(), last.id.as_deref()) {
                (Some(a), Some(b)) if a != b => {
                    format!("events {}–{}", short_event_id(a), short_event_id(b))
                }
                (Some(a), _) if run.len() == 1 => format!("event {}", short_event_id(a)),
                _ if run.len() == 1 => "1 event".to_string(),
                _ => format!("{} events", run.len()),
            };
            let foreign = run
                .iter()
                .filter_map(|&i| match st.events[i].namespace {
                    Namespace::Stream(ns) if ns != st.idx => Some(ns),
                    _ => None,
                })
                .next();
            let mut what = summarize_messages(&msgs);
            if primings > 0 {
                if !what.is_empty() {
                    what.push_str(", ");
                }
                what.push_str(if primings == 1 { "priming" } else { "primings" });
            }
            if let Some(ev) = run
                .iter()
                .map(|&i| &st.events[i])
                .find(|e| e.endpoint.is_some())
            {
                what = format!("endpoint {}", ev.endpoint.clone().unwrap_or_default());
            }
            let minted = foreign
                .map(|ns| format!(" — minted by {}", s.streams[ns].label()))
                .unwrap_or_default();
            out.push(Entry {
                time: first.mark,
                session: s.idx,
                stream: Some(st.label()),
                arrow: "s→c",
                kind: "events",
                text: format!(
                    "{ids} on {}{}{minted}",
                    st.label(),
                    if what.is_empty() {
                        String::new()
                    } else {
                        format!(" ({what})")
                    }
                ),
                findings: Vec::new(),
                request_ids: msgs
                    .iter()
                    .filter(|m| matches!(m.kind, Kind::Response | Kind::Error))
                    .filter_map(|m| m.id.clone())
                    .collect(),
                event_ids: first
                    .id
                    .as_deref()
                    .map(str::to_string)
                    .zip(last.id.as_deref().map(str::to_string)),
                frames: vec![first.mark, last.mark],
            });
            run.clear();
        };
        let answered_here = !requests.is_empty()
            && requests
                .iter()
                .all(|r| own_answer.iter().any(|a| a.id.is_some() && a.id == r.id));
        let quiet_post = st.transport == StreamTransport::Post
            && st.resume.is_none()
            && answered_here
            && !st.interrupted()
            && st.events.iter().all(|e| !flagged.contains(&e.mark));
        if !quiet_post || all_events {
            for (i, ev) in st.events.iter().enumerate() {
                let breaks = all_events
                    || flagged.contains(&ev.mark)
                    || ev
                        .messages
                        .iter()
                        .any(|m| matches!(m.kind, Kind::Response | Kind::Error))
                    || ev.endpoint.is_some()
                    || run
                        .last()
                        .is_some_and(|&p| ev.mark.time.seconds_since(st.events[p].mark.time) > 5.0);
                if breaks {
                    flush(&mut run, &mut out);
                }
                run.push(i);
                if breaks {
                    flush(&mut run, &mut out);
                }
            }
            flush(&mut run, &mut out);
        }
        if let Some((arrow, text)) = cut_text(st)
            && !(st.transport == StreamTransport::Post && answered_here)
        {
            let at = st.ended.unwrap_or(st.opened);
            out.push(Entry {
                time: at,
                session: s.idx,
                stream: Some(st.label()),
                arrow,
                kind: "stream_end",
                text,
                findings: Vec::new(),
                request_ids: Vec::new(),
                event_ids: None,
                frames: vec![at],
            });
        }
    }
    for (pos, f) in findings {
        out.push(Entry {
            time: f.time,
            session: s.idx,
            stream: None,
            arrow: "▲",
            kind: "finding",
            text: format!(
                "{} {}: {}",
                f.severity.name().to_uppercase(),
                f.kind,
                f.summary
            ),
            findings: vec![*pos],
            request_ids: Vec::new(),
            event_ids: None,
            frames: f.frames.clone(),
        });
    }
    if let Some(d) = s.deleted {
        let _ = d;
    }
    out.sort_by_key(|e| (e.time, e.kind == "finding"));
    condense_requests(out)
}

/// Consecutive quiet requests of the same method, each answered on its own stream, become one
/// row (`tools/call #8–#19 (12 requests) ... each answered`).
fn condense_requests(entries: Vec<Entry>) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut group: Vec<Entry> = Vec::new();
    let key = |e: &Entry| -> Option<String> {
        if e.kind != "request" || !e.text.ends_with(", answered") || e.request_ids.len() != 1 {
            return None;
        }
        Some(e.text.split(" #").next().unwrap_or("").to_string())
    };
    let flush = |group: &mut Vec<Entry>, out: &mut Vec<Entry>| {
        if group.len() < 3 {
            out.append(group);
            return;
        }
        let first = group[0].clone();
        let last = group[group.len() - 1].clone();
        let method = first.text.split(" #").next().unwrap_or("").to_string();
        let ids: Vec<RequestId> = group.iter().flat_map(|e| e.request_ids.clone()).collect();
        out.push(Entry {
            text: format!(
                "{method} #{}–#{} ({} requests) on {}…{}, each answered on its own stream",
                ids.first().map(|i| i.label()).unwrap_or_default(),
                ids.last().map(|i| i.label()).unwrap_or_default(),
                group.len(),
                first.stream.clone().unwrap_or_default(),
                last.stream.clone().unwrap_or_default()
            ),
            request_ids: ids,
            frames: vec![first.time, last.time],
            ..first
        });
        group.clear();
    };
    for e in entries {
        match (key(&e), group.first().and_then(key)) {
            (Some(k), Some(g)) if k == g => group.push(e),
            (Some(_), None) => group.push(e),
            (Some(_), Some(_)) => {
                flush(&mut group, &mut out);
                group.push(e);
            }
            (None, _) => {
                flush(&mut group, &mut out);
                out.push(e);
            }
        }
    }
    flush(&mut group, &mut out);
    out
}
