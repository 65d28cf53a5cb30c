//! The incident timeline of a session: requests with their answers, fallbacks, streams opened
//! and cut, runs of events condensed, resumes, and every finding placed at its time.

use mcpf_detect::Finding;
use mcpf_mcp::jsonrpc::{Kind, Message, RequestId};
use mcpf_mcp::model::{EventRec, Namespace, Session, Stream, StreamTransport};
use mcpf_model::{Mark, WireMap, WireSet};

#[derive(Clone, Debug)]
pub struct Entry {
    pub time: Mark,
    pub(crate) session: usize,
    pub(crate) stream: Option<String>,
    /// `c→s`, `s→c`, `c ✕` (the client cut), `s ✕` (the server cut), `▲` (a finding).
    pub(crate) arrow: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) text: String,
    /// Positions of findings placed here.
    pub findings: Vec<usize>,
    pub(crate) request_ids: Vec<RequestId>,
    pub(crate) event_ids: Option<(String, String)>,
    pub(crate) frames: Vec<Mark>,
}

/// Event IDs as a person scans them: long opaque IDs keep their head and tail.
fn short_event_id(id: &str) -> String {
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
        (Some(Outcome::StreamReset), Some(Direction::ClientToServer)) => Some((
            "c ✕",
            format!("{} stream reset by the client (HTTP/2){after}", st.label()),
        )),
        (Some(Outcome::StreamReset), _) => Some((
            "s ✕",
            format!("{} stream reset by the server (HTTP/2){after}", st.label()),
        )),
        (Some(Outcome::Refused), _) => Some((
            "s ✕",
            format!(
                "{} refused by the server (HTTP/2 GOAWAY or REFUSED_STREAM: never processed){after}",
                st.label()
            ),
        )),
        (Some(Outcome::ClosedEarly), Some(Direction::ClientToServer)) => {
            Some(("c ✕", format!("client closed {}{after}", st.label())))
        }
        (Some(Outcome::ClosedEarly), _) => {
            Some(("s ✕", format!("server closed {}{after}", st.label())))
        }
        (Some(Outcome::NotExamined), _) => Some((
            "…",
            format!(
                "{} not examined past here: its connection was set aside as not MCP{after}",
                st.label()
            ),
        )),
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

/// A progress token → the label of the request that gave it (`reindex-7` → `7`).
type Tokens = WireMap<String, String>;

/// The session's progress tokens and their requests.
fn tokens(s: &Session) -> Tokens {
    let mut out = Tokens::default();
    for m in s.streams.iter().flat_map(|st| st.requests()) {
        if let (Some(t), Some(id)) = (&m.mcp.progress_token, &m.id) {
            out.entry(t.clone()).or_insert_with(|| id.label());
        }
    }
    out
}

fn summarize_messages(msgs: &[&Message], tokens: &Tokens) -> String {
    // In order of first appearance; the map keeps a run of distinct tokens linear.
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut at: WireMap<String, usize> = WireMap::default();
    for m in msgs {
        let key = match m.kind {
            Kind::Notification => {
                let for_req = m
                    .mcp
                    .progress_token
                    .as_ref()
                    // Progress says which request it is for, by the request's ID when known.
                    .map(|t| match tokens.get(t) {
                        Some(id) => format!(" (for #{id})"),
                        None => format!(" (token {})", t.trim_matches('"')),
                    })
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
        match at.get(&key) {
            Some(&i) => counts[i].1 += 1,
            None => {
                at.insert(key.clone(), counts.len());
                counts.push((key, 1));
            }
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
    // Sorted once and searched: 100,000 duplicate responses are 100,000 findings.
    let mut flagged: Vec<Mark> = findings
        .iter()
        .flat_map(|(_, f)| f.frames.iter().copied())
        .collect();
    flagged.sort_unstable();
    flagged.dedup();
    let mut fallback_to: Vec<usize> = s.fallbacks.iter().map(|f| f.to_stream).collect();
    fallback_to.sort_unstable();
    let tokens = tokens(s);
    for st in &s.streams {
        let mut msgs = StreamMessages::of(st);
        msgs.fallback_to = fallback_to.binary_search(&st.idx).is_ok();
        out.push(opening_entry(s, &msgs));
        if !msgs.quiet_post(&flagged) || all_events {
            push_event_runs(&mut out, s, st, &flagged, all_events, &tokens);
        }
        out.extend(cut_entry(s, &msgs));
    }
    out.extend(
        findings
            .iter()
            .map(|&(pos, f)| finding_entry(s.idx, pos, f)),
    );
    out.sort_by_key(|e| (e.time, e.kind == "finding"));
    condense_requests(out)
}

/// A response or an error: what answers a request.
fn is_answer(m: &Message) -> bool {
    matches!(m.kind, Kind::Response | Kind::Error)
}

/// A stream's client messages and the answers it carried itself: what its rows are made of.
struct StreamMessages<'a> {
    st: &'a Stream,
    requests: Vec<&'a Message>,
    /// Client messages that are not requests (notifications, answers to the server).
    notes: Vec<&'a Message>,
    /// Responses and errors on the stream itself, in its events or its response body.
    answers: Vec<&'a Message>,
    /// Every request the stream carried was answered on it (worked out once: a batch can
    /// hold 100,000 requests).
    answered: bool,
    /// A fallback went to this stream.
    fallback_to: bool,
}

impl<'a> StreamMessages<'a> {
    fn of(st: &'a Stream) -> Self {
        let mut msgs = StreamMessages {
            st,
            requests: st.requests().collect(),
            notes: st
                .client_messages
                .iter()
                .filter(|m| m.kind != Kind::Request)
                .collect(),
            answers: st
                .events
                .iter()
                .flat_map(|e| e.messages.iter())
                .chain(st.response_messages.iter())
                .filter(|m| is_answer(m))
                .collect(),
            answered: false,
            fallback_to: false,
        };
        let ids: WireSet<&RequestId> = msgs.answers.iter().filter_map(|a| a.id.as_ref()).collect();
        msgs.answered = !msgs.requests.is_empty()
            && msgs
                .requests
                .iter()
                .all(|r| r.id.as_ref().is_some_and(|id| ids.contains(id)));
        msgs
    }

    /// Every request the stream carried was answered on it.
    fn answered_here(&self) -> bool {
        self.answered
    }

    /// Answered on its own stream, quickly and quietly: the request row says it all, and its
    /// events get no rows.
    fn quiet_post(&self, flagged: &[Mark]) -> bool {
        let st = self.st;
        st.transport == StreamTransport::Post
            && st.resume.is_none()
            && self.answered_here()
            && !st.interrupted()
            && st
                .events
                .iter()
                .all(|e| flagged.binary_search(&e.mark).is_err())
    }
}

/// The row of a stream's opening (a request, or a resume): what the client sent, the kind of
/// response, and whether the stream answered every request.
fn opening_entry(s: &Session, msgs: &StreamMessages) -> Entry {
    let st = msgs.st;
    if st.method.is_empty() {
        return headless_entry(s, st);
    }
    let mut text = opening_text(msgs);
    text.push_str(&format!("  {}", response_kind(st)));
    if msgs.answered_here() {
        text.push_str(if msgs.answers.iter().any(|a| a.kind == Kind::Error) {
            ", error"
        } else {
            ", answered"
        });
    }
    Entry {
        time: st.opened,
        session: s.idx,
        stream: Some(st.label()),
        arrow: "c→s",
        kind: if st.resume.is_some() {
            "resume"
        } else {
            "request"
        },
        text,
        findings: Vec::new(),
        request_ids: msgs.requests.iter().filter_map(|m| m.id.clone()).collect(),
        event_ids: None,
        frames: vec![st.opened],
    }
}

/// A response whose request (and maybe head) the capture does not hold: it began before the
/// capture, or a gap took its request.
fn headless_entry(s: &Session, st: &Stream) -> Entry {
    let what = if st.status.is_some() {
        format!("{} (its request is not in the capture)", response_kind(st))
    } else {
        "response picked up mid-body (its request and head are not in the capture)".to_string()
    };
    Entry {
        time: st.opened,
        session: s.idx,
        stream: Some(st.label()),
        arrow: "s→c",
        kind: "response",
        text: format!("{} {what}", st.label()),
        findings: Vec::new(),
        request_ids: Vec::new(),
        event_ids: None,
        frames: vec![st.opened],
    }
}

/// What the client sent to open a stream: its requests, what a GET was for, or its other
/// messages.
fn opening_text(msgs: &StreamMessages) -> String {
    let st = msgs.st;
    match (st.method.as_str(), msgs.requests.first()) {
        (_, Some(_)) => format!(
            "{} {}",
            st.method,
            msgs.requests
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
                // Switched to another protocol (a WebSocket): no stream of events.
                (None, _) if st.status == Some(101) => "(switched protocols: not read)".into(),
                (None, _) => {
                    if msgs.fallback_to {
                        "(fallback stream)".into()
                    } else {
                        "(standalone stream)".into()
                    }
                }
            };
            format!("GET {} {what}", st.target)
        }
        (m, None) if !msgs.notes.is_empty() => format!(
            "{m} {}",
            msgs.notes
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
    }
}

/// A stream's events as rows: runs, broken where a finding points, by a response, by an
/// endpoint event or by a pause of over five seconds; one row per event with `all_events`.
fn push_event_runs(
    out: &mut Vec<Entry>,
    s: &Session,
    st: &Stream,
    flagged: &[Mark],
    all_events: bool,
    tokens: &Tokens,
) {
    let mut run: Vec<usize> = Vec::new();
    let flush = |run: &mut Vec<usize>, out: &mut Vec<Entry>| {
        if !run.is_empty() {
            out.push(run_entry(s, st, run, tokens));
            run.clear();
        }
    };
    // Events that share one mark (a HAR keeps no time or frame per event: every event of an
    // entry has the entry's) are one place a finding can point at, and stay one row.
    let flagged_at = |i: usize| flagged.binary_search(&st.events[i].mark).is_ok();
    let same_mark = |a: usize, b: usize| st.events[a].mark == st.events[b].mark;
    for (i, ev) in st.events.iter().enumerate() {
        let flag_starts = flagged_at(i) && (i == 0 || !same_mark(i - 1, i));
        let flag_ends = flagged_at(i) && (i + 1 == st.events.len() || !same_mark(i, i + 1));
        let breaks = all_events
            || ev.messages.iter().any(is_answer)
            || ev.endpoint().is_some()
            || run
                .last()
                .is_some_and(|&p| ev.mark.time.seconds_since(st.events[p].mark.time) > 5.0);
        if breaks || flag_starts {
            flush(&mut run, out);
        }
        run.push(i);
        if breaks || flag_ends {
            flush(&mut run, out);
        }
    }
    flush(&mut run, out);
    out.extend(unheld_entry(s, st));
}

/// The events of a stream past its session's cap, counted and not held: one row after the
/// last one held, so the timeline does not seem to end there.
fn unheld_entry(s: &Session, st: &Stream) -> Option<Entry> {
    let n = st.events_unheld;
    let at = st.events.last().map_or(st.opened, |e| e.mark);
    (n > 0).then(|| Entry {
        time: at,
        session: s.idx,
        stream: Some(st.label()),
        arrow: "s→c",
        kind: "events",
        text: format!(
            "{n} more events on {} counted, not held (past --max-session-events)",
            st.label()
        ),
        findings: Vec::new(),
        request_ids: Vec::new(),
        event_ids: None,
        frames: vec![at],
    })
}

/// The row of a run of events (positions in the stream's events, never empty): their IDs, what
/// they carried, and the stream that minted their IDs when it is another.
fn run_entry(s: &Session, st: &Stream, run: &[usize], tokens: &Tokens) -> Entry {
    let first = &st.events[run[0]];
    let last = &st.events[*run.last().unwrap_or(&run[0])];
    let msgs: Vec<&Message> = run
        .iter()
        .flat_map(|&i| st.events[i].messages.iter())
        .collect();
    let what = run_contents(st, run, &msgs, tokens);
    let minted = run
        .iter()
        .find_map(|&i| match st.events[i].namespace {
            Namespace::Stream(ns) if ns != st.idx => Some(ns),
            _ => None,
        })
        .map(|ns| format!(" — minted by {}", s.streams[ns].label()))
        .unwrap_or_default();
    Entry {
        time: first.mark,
        session: s.idx,
        stream: Some(st.label()),
        arrow: "s→c",
        kind: "events",
        text: format!(
            "{} on {}{}{minted}",
            run_ids(first, last, run.len()),
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
            .filter(|m| is_answer(m))
            .filter_map(|m| m.id.clone())
            .collect(),
        event_ids: first
            .id
            .as_deref()
            .map(str::to_string)
            .zip(last.id.as_deref().map(str::to_string)),
        frames: vec![first.mark, last.mark],
    }
}

/// `events 1–9`, `event 7`, `1 event`, `12 events`: a run by its first and last event IDs.
fn run_ids(first: &EventRec, last: &EventRec, len: usize) -> String {
    match (first.id.as_deref(), last.id.as_deref()) {
        (Some(a), Some(b)) if a != b => {
            format!("events {}–{}", short_event_id(a), short_event_id(b))
        }
        (Some(a), _) if len == 1 => format!("event {}", short_event_id(a)),
        _ if len == 1 => "1 event".to_string(),
        _ => format!("{len} events"),
    }
}

/// What a run of events carried: its messages counted and its primings, or the endpoint it
/// announced (legacy SSE).
fn run_contents(st: &Stream, run: &[usize], msgs: &[&Message], tokens: &Tokens) -> String {
    if let Some(ev) = run
        .iter()
        .map(|&i| &st.events[i])
        .find(|e| e.endpoint().is_some())
    {
        return format!("endpoint {}", ev.endpoint().unwrap_or_default());
    }
    let primings = run.iter().filter(|&&i| st.events[i].priming).count();
    let mut what = summarize_messages(msgs, tokens);
    if primings > 0 {
        if !what.is_empty() {
            what.push_str(", ");
        }
        what.push_str(if primings == 1 { "priming" } else { "primings" });
    }
    what
}

/// The row of a stream that did not end by its own framing, unless it is a POST that had
/// answered every request by then.
fn cut_entry(s: &Session, msgs: &StreamMessages) -> Option<Entry> {
    let st = msgs.st;
    if st.transport == StreamTransport::Post && msgs.answered_here() {
        return None;
    }
    let (arrow, mut text) = cut_text(st)?;
    if st.end_time_unknown {
        text.push_str(" (when is not recorded: shown at the last moment the input gives)");
    }
    let at = st.ended.unwrap_or(st.opened);
    Some(Entry {
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
    })
}

/// The row of a finding (at position `pos`), placed at its time.
fn finding_entry(session: usize, pos: usize, f: &Finding) -> Entry {
    Entry {
        time: f.time,
        session,
        stream: None,
        arrow: "▲",
        kind: "finding",
        text: format!(
            "{} {}: {}",
            f.severity.name().to_uppercase(),
            f.kind,
            f.summary
        ),
        findings: vec![pos],
        request_ids: Vec::new(),
        event_ids: None,
        frames: f.frames.clone(),
    }
}

/// Whether the entries' streams are `t:sN`, `t:sN+1`, … in their order.
fn streams_in_order(group: &[Entry]) -> bool {
    let number = |e: &Entry| -> Option<(String, u64)> {
        let (t, n) = e.stream.as_deref()?.split_once(":s")?;
        Some((t.to_string(), n.parse().ok()?))
    };
    let Some((kind, first)) = group.first().and_then(number) else {
        return false;
    };
    group.iter().enumerate().all(|(i, e)| {
        number(e).is_some_and(|(t, n)| t == kind && Some(n) == first.checked_add(i as u64))
    })
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
        // Only a run whose streams are numbered one after the other, in its order, is said as a
        // range: the row's `s5…s16` then says which stream carried which request.
        if group.len() < 3 || !streams_in_order(group) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn on(stream: &str) -> Entry {
        Entry {
            time: Mark {
                time: mcpf_model::Timestamp(0),
                frame: mcpf_model::FrameRef::new(0, 1),
            },
            session: 0,
            stream: Some(stream.to_string()),
            arrow: "c→s",
            kind: "request",
            text: String::new(),
            findings: Vec::new(),
            request_ids: Vec::new(),
            event_ids: None,
            frames: Vec::new(),
        }
    }

    #[test]
    fn a_run_is_said_as_a_range_only_when_its_streams_follow_each_other_in_its_order() {
        let run =
            |labels: &[&str]| streams_in_order(&labels.iter().map(|l| on(l)).collect::<Vec<_>>());
        assert!(run(&["post:s5", "post:s6", "post:s7"]));
        assert!(!run(&["post:s5", "post:s7", "post:s6"]));
        assert!(!run(&["post:s5", "post:s6", "post:s8"]));
        assert!(!run(&["post:s5", "get:s6", "post:s7"]));
        assert!(!run(&["post:s5", "post:x", "post:s7"]));
    }
}
