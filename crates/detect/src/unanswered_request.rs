//! `unanswered_request`: a request never answered although the session went on or the client
//! gave up. A request merely still young when the capture ended is only `info`.

use serde::{Deserialize, Serialize};

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject, rejected};
use crate::index::Index;
use mcpf_http::Outcome;
use mcpf_mcp::jsonrpc::{Kind, Message, RequestId};
use mcpf_mcp::model::{Seq, Session, Stream, StreamIdx, Transport, Need};
use mcpf_model::{Direction, Mark, WireMap, WireSet};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::UnansweredRequest,
    severity: Severity::High,
    when: "a request never answered although the session went on or the client gave up (a request still young at capture end is info)",
    meaning: "No JSON-RPC response or error with this request's ID reached the client on any stream of the session.",
    why: "The caller hangs until its own timeout, and whether the tool ran is unknown: MCP cannot tell 'never arrived' from 'executed, response lost'.",
    fix: "See caused_by for where the answer went. Client: bound the wait, then re-issue the request with a new ID and an idempotency key; Server: send the response on the stream the client is reading, and keep it for replay.",
    requires: &[Need::Bodies, Need::EveryEvent],
};

pub(crate) fn detect(s: &Session, ix: &Index<'_>, f: &mut Findings) {
    let cancelled: WireSet<&RequestId> = s
        .streams
        .iter()
        .flat_map(|st| st.client_messages.iter())
        .filter(|m| m.kind == Kind::Notification)
        .filter_map(|m| m.mcp.cancels.as_ref())
        .collect();
    // Worked out at the first request left unanswered: most sessions have none.
    let mut ctx: Option<Context<'_>> = None;
    for (i, (si, req)) in ix.requests.iter().enumerate() {
        let Some(id) = &req.id else { continue };
        if rejected(s, *si) || cancelled.contains(&id) {
            continue;
        }
        let st = &s.streams[*si];
        if answered(s, ix, i, id) || (st.body_unknown && !left_for_fallback(s, st.idx)) {
            continue;
        }
        // Its response came and the snap length cut it: the answer is most likely in what was
        // cut, and saying so for every request of such a capture says nothing.
        if st.cut_by_snaplen_only() && st.response_mark.is_some() {
            continue;
        }
        let ctx = &*ctx.get_or_insert_with(|| Context::new(s));
        // Where its messages were last being delivered: its progress may have moved to a GET
        // stream after a fallback.
        let last_progress = req
            .mcp
            .progress_token
            .as_ref()
            .and_then(|t| ctx.progress.get(t).copied());
        let channel = last_progress.map_or(st.idx, |(other, _, _)| other);
        // Another stream opened later: later requests, later exchanges.
        let went_on = ctx.last_opened.is_some_and(|l| l > s.seq(st.opened));
        let gave_up = st.abandoned_by_client()
            || s.streams[channel].abandoned_by_client()
            || s.deleted.is_some();
        let cause = cause(s, f, channel);
        // An answer a replay skipped past is lost even if the stream stayed open.
        let still_open = cause.is_none() && ctx.open_at_end(s, st, channel);
        let hidden = ctx.answer_may_be_missing(s, st, channel);
        let u = Unanswered {
            st,
            req,
            id,
            channel,
            went_on,
            gave_up,
            still_open,
            hidden,
            waited: s.end.time.seconds_since(st.opened.time).max(0.0),
            progress: last_progress.map(|(ls, le, _)| Progress::of(s, ls, le)),
            cause,
        };
        f.add(s, finding(s, ctx, u));
    }
}

/// What every unanswered request of a session is weighed against, worked out once.
struct Context<'a> {
    /// Where the latest stream of the session was opened.
    last_opened: Option<Seq>,
    /// The session was not ended and an event stream of it was open when the capture stopped.
    event_stream_open: bool,
    /// The legacy transport (answers on the event stream only) and no event stream captured.
    legacy_unseen: bool,
    /// Streams that may have carried answers and lack bytes: those still open, and the others
    /// by where they ended, latest first (a request asks for those ending after it was sent).
    lacking_open: Vec<StreamIdx>,
    lacking_ended: Vec<(Seq, StreamIdx)>,
    /// Resumes that continue each stream, and the last 404 for the session.
    resumes: WireMap<StreamIdx, usize>,
    last_forgotten: Option<Seq>,
    /// The last event that reported progress on each token: (stream, event, mark).
    progress: WireMap<&'a String, (StreamIdx, usize, Mark)>,
}
/// A request left without an answer, and what is known of the wait.
struct Unanswered<'a> {
    st: &'a Stream,
    req: &'a Message,
    id: &'a RequestId,
    /// The stream its answer would have come on.
    channel: StreamIdx,
    /// The session went on after the request: later exchanges, later requests.
    went_on: bool,
    /// The client gave up: it cut the stream the answer would come on, or deleted the session.
    gave_up: bool,
    /// The answer could still come when the capture stopped.
    still_open: bool,
    /// Bytes are missing where the answer would have come: it may be among them.
    hidden: Option<String>,
    waited: f64,
    progress: Option<Progress>,
    cause: Option<usize>,
}

/// An answer to `id` arrived on any stream after the request at `pos`, before it was sent
/// again.
fn answered(s: &Session, ix: &Index<'_>, pos: usize, id: &RequestId) -> bool {
    let next_same = ix.next_send(id, pos).map(|n| ix.sent(s, n));
    !ix.answers
        .between(id, ix.sent(s, pos), next_same)
        .is_empty()
}

fn open(o: &Stream) -> bool {
    o.ended.is_none() || o.outcome == Some(Outcome::CutByCaptureEnd)
}

impl<'a> Context<'a> {
    fn new(s: &'a Session) -> Self {
        // A stream whose bytes the capture lost, or whose body the input did not record (a
        // HAR of an aborted stream), may have carried the answer.
        let gaps = s.streams.iter().filter(|o| lacks_bytes(o) && may_stream(o));
        let lacking_open = gaps
            .clone()
            .filter(|o| o.ended.is_none())
            .map(|o| o.idx)
            .collect();
        let mut lacking_ended: Vec<(Seq, StreamIdx)> = gaps
            .filter_map(|o| Some((s.seq(o.ended?), o.idx)))
            .collect();
        lacking_ended.sort_unstable_by(|a, b| b.cmp(a));
        let mut resumes: WireMap<StreamIdx, usize> = WireMap::default();
        for c in s
            .streams
            .iter()
            .filter_map(|o| o.resume.as_ref()?.continues)
        {
            *resumes.entry(c).or_default() += 1;
        }
        Context {
            last_opened: s.streams.iter().map(|o| s.seq(o.opened)).max(),
            event_stream_open: s.streams.iter().any(|o| o.event_stream && open(o)),
            legacy_unseen: s.transport == Transport::LegacySse
                && !s.streams.iter().any(|o| o.event_stream),
            lacking_open,
            lacking_ended,
            resumes,
            last_forgotten: s.forgotten.iter().map(|m| s.seq(*m)).max(),
            progress: progress_reports(s),
        }
    }

    /// The session was not ended and a stream the answer could still come on was open when
    /// the capture stopped: its own, the one its progress moved to, or an event stream of the
    /// session.
    fn open_at_end(&self, s: &Session, st: &Stream, channel: StreamIdx) -> bool {
        s.deleted.is_none()
            && s.forgotten.is_empty()
            && (open(st) || open(&s.streams[channel]) || self.event_stream_open)
    }

    /// Where bytes are missing that the answer could have come in: its own stream, the one
    /// its progress moved to, or any event stream of the session still open once it was sent;
    /// or, on the legacy transport (answers on the event stream only), no event stream of the
    /// session was captured. None: nothing is missing there.
    fn answer_may_be_missing(
        &self,
        s: &Session,
        st: &Stream,
        channel: StreamIdx,
    ) -> Option<String> {
        if self.legacy_unseen {
            return Some("the session's event stream (none in the input)".into());
        }
        let sent = s.seq(st.opened);
        // Its own stream and its channel, then those still open, then those that ended after it
        // was sent (latest first): three are named, the rest counted.
        let ended_after = self
            .lacking_ended
            .iter()
            .take_while(|(e, _)| *e >= sent)
            .map(|(_, i)| *i);
        let after = self.lacking_ended.partition_point(|(e, _)| *e >= sent);
        let left = |i: StreamIdx| i == st.idx && left_for_fallback(s, i);
        let mut named: Vec<StreamIdx> = Vec::with_capacity(3);
        let candidates = [st.idx, channel]
            .into_iter()
            .filter(|i| lacks_bytes(&s.streams[*i]))
            .chain(self.lacking_open.iter().copied())
            .chain(ended_after)
            .filter(|i| !left(*i));
        for i in candidates {
            if named.len() == 3 {
                break;
            }
            if !named.contains(&i) {
                named.push(i);
            }
        }
        if named.is_empty() {
            return None;
        }
        let total = (self.lacking_open.len() + after).max(named.len());
        let mut named: Vec<String> = named.iter().map(|i| s.streams[*i].label()).collect();
        if total > named.len() {
            named.push(format!("{} more", total - named.len()));
        }
        Some(named.join(", "))
    }
}

/// The client left the stream for a fallback its request's messages followed (they arrived on
/// the fallback stream): whatever the input did not record of it, it carried nothing more of
/// the request to the client.
fn left_for_fallback(s: &Session, st: StreamIdx) -> bool {
    s.fallbacks
        .iter()
        .any(|f| f.confirmed && f.abandoned_stream == Some(st))
}

fn lacks_bytes(o: &Stream) -> bool {
    o.gap || o.body_unknown
}

/// An event stream, or a stream whose response head the capture lost (it may have been one).
fn may_stream(o: &Stream) -> bool {
    o.event_stream || o.status.is_none() || o.resume.is_some()
}

/// The last event that reported progress on each token: (stream, event, mark).
fn progress_reports(s: &Session) -> WireMap<&String, (StreamIdx, usize, Mark)> {
    let mut last: WireMap<&String, (StreamIdx, usize, Mark)> = WireMap::default();
    for other in &s.streams {
        for (ei, ev) in other.events.iter().enumerate() {
            let tokens = ev
                .messages
                .iter()
                .filter(|m| m.kind == Kind::Notification)
                .filter_map(|m| m.mcp.progress_token.as_ref());
            for token in tokens {
                let at = last.entry(token).or_insert((other.idx, ei, ev.mark));
                if s.seq(ev.mark) > s.seq(at.2) {
                    *at = (other.idx, ei, ev.mark);
                }
            }
        }
    }
    last
}

/// What took the answer: the events skipped on the stream it would have come on, or the
/// cross-namespace replay observed there.
fn cause(s: &Session, f: &Findings, channel: StreamIdx) -> Option<usize> {
    f.find(
        s.idx,
        FindingKind::SkippedEvents,
        &Subject::Namespace(channel),
    )
    .or_else(|| {
        f.of(s.idx, FindingKind::CrossNamespaceReplay)
            .find(|x| match &x.evidence {
                crate::Evidence::CrossNamespaceReplay(e) => {
                    e.observed_in == s.streams[channel].label()
                }
                _ => false,
            })
            .map(|x| x.handle)
    })
    .or_else(|| {
        // The resume of that stream was lost and the client reconnected without its cursor.
        let label = s.streams[channel].label();
        f.of(s.idx, FindingKind::CursorDropped)
            .find(|x| match &x.evidence {
                crate::Evidence::CursorDropped(e) => e.resumed_stream.as_ref() == Some(&label),
                _ => false,
            })
            .map(|x| x.handle)
    })
}

impl Progress {
    fn of(s: &Session, stream: StreamIdx, event: usize) -> Progress {
        let ev = &s.streams[stream].events[event];
        let p = ev.messages.iter().find(|m| m.mcp.progress.is_some());
        Progress {
            stream: s.streams[stream].label(),
            event_id: ev.id.as_deref().map(str::to_string),
            time: ev.mark.time.rfc3339(),
            frame: ev.mark.frame.frame,
            progress: p.and_then(|m| m.mcp.progress.clone()),
            total: p.and_then(|m| m.mcp.total.clone()),
        }
    }
}

/// Why the answer never came, from the evidence: a short name for the JSON and the words the
/// report puts on the finding's line.
struct Why {
    kind: CauseKind,
    text: String,
    stream: Option<StreamIdx>,
}

fn why(s: &Session, ctx: &Context<'_>, u: &Unanswered<'_>, young: bool) -> Why {
    let (st, ch) = (u.st, &s.streams[u.channel]);
    let on = |kind, text: String, stream: &Stream| Why {
        kind,
        text,
        stream: Some(stream.idx),
    };
    if let Some(lacking) = &u.hidden {
        return Why {
            kind: CauseKind::BytesMissing,
            text: format!("the input lacks bytes of {lacking}, where it could have come"),
            stream: Some(u.channel),
        };
    }
    if u.cause.is_some() {
        let text = format!(
            "the resume of {} replayed another namespace and skipped it",
            ch.label()
        );
        return on(CauseKind::SkippedByReplay, text, ch);
    }
    if young {
        return on(
            CauseKind::PendingAtCaptureEnd,
            "the capture ended while it was pending".into(),
            ch,
        );
    }
    if st.status == Some(202) {
        return on(
            CauseKind::AcceptedWithoutAnswer,
            format!(
                "{} was answered 202 Accepted, with no JSON-RPC body",
                st.label()
            ),
            st,
        );
    }
    if ctx.last_forgotten.is_some_and(|m| m > s.seq(st.opened)) {
        return on(
            CauseKind::SessionExpired,
            "the server forgot the session (404) before answering".into(),
            st,
        );
    }
    let resumes = ctx.resumes.get(&u.channel).copied().unwrap_or(0);
    let ended = |o: &Stream| o.ended.map_or(0.0, |e| e.time.seconds_since(o.opened.time));
    match (ch.outcome, ch.closed_by) {
        (Some(Outcome::Reset), by) => {
            let who = match by {
                Some(Direction::ClientToServer) => "the client",
                Some(Direction::ServerToClient) => "the server",
                None => "one side",
            };
            on(
                CauseKind::ConnectionReset,
                format!("{who} reset the connection of {}", ch.label()),
                ch,
            )
        }
        _ if ch.abandoned_by_client() => {
            let after = if resumes > 0 {
                format!(
                    " and {resumes} resume{}",
                    if resumes == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            };
            let text = format!(
                "the client gave up on {} after {:.1} s{after}",
                ch.label(),
                ended(ch)
            );
            on(CauseKind::ClientGaveUp, text, ch)
        }
        (Some(Outcome::StreamReset), _) => on(
            CauseKind::StreamReset,
            format!("the server reset the HTTP/2 stream of {}", ch.label()),
            ch,
        ),
        (Some(Outcome::Refused), _) => on(
            CauseKind::StreamRefused,
            format!(
                "the server refused the HTTP/2 stream of {} (a GOAWAY or REFUSED_STREAM: never \
                 processed, safe to send again)",
                ch.label()
            ),
            ch,
        ),
        (Some(Outcome::ClosedEarly), Some(Direction::ServerToClient)) => on(
            CauseKind::ServerClosed,
            format!("the server closed {} without answering", ch.label()),
            ch,
        ),
        _ if s.deleted.is_some() => on(
            CauseKind::SessionDeleted,
            "the client deleted the session without it".into(),
            ch,
        ),
        _ => on(
            CauseKind::NeverAnswered,
            format!("the server never answered on {}", ch.label()),
            ch,
        ),
    }
}

fn finding(s: &Session, ctx: &Context<'_>, u: Unanswered<'_>) -> New {
    let Unanswered { st, req, id, .. } = u;
    let what = match (&req.method, &req.mcp.tool) {
        (Some(m), Some(t)) => format!("{m} \"{t}\""),
        (Some(m), None) => m.to_string(),
        _ => "request".into(),
    };
    // A request the capture ended on may simply not be answered yet; one whose answer may be
    // in bytes the capture lacks is not determinable. A response that ended by its own framing
    // without the answer says it will not come: a server answers a POST on its own response.
    // A stream the server ended after a `retry:` (SSE polling) invites a resume: the answer may
    // come on it, so its end alone does not say the answer will not come.
    let invites_resume = st.last_retry.is_some() || st.events.iter().any(|e| e.retry().is_some());
    let done = st.status.is_some() && st.outcome == Some(Outcome::Complete) && !invites_resume;
    let young = u.still_open || (!u.went_on && !u.gave_up && !done);
    let waited = u.waited;
    let why = why(s, ctx, &u, young);
    let head = |what_now: String| format!("request {} {what} {what_now}", id.label());
    let (kind, severity, head, summary) = if u.hidden.is_some() {
        let head = head("never answered".into());
        let text = format!(
            "request {} {what}: no answer in the input, but {} (not determinable)",
            id.label(),
            why.text
        );
        (FindingKind::UnansweredRequest, Severity::Info, head, text)
    } else if young {
        let text = head(format!(
            "still pending when the capture ended ({waited:.1} s)"
        ));
        (FindingKind::PendingAtCaptureEnd, Severity::Info, text.clone(), text)
    } else {
        let head = head(format!("never answered (waited {waited:.1} s)"));
        let text = format!("{head}: {}", why.text);
        (FindingKind::UnansweredRequest, INFO.severity, head, text)
    };
    let evidence = Evidence {
        request_id: id.clone(),
        method: req.method.as_deref().map(str::to_string),
        tool: req.mcp.tool.clone(),
        waited_s: (waited * 1000.0).round() / 1000.0,
        sent: Sent {
            stream: st.label(),
            exchange: st.exchange.to_string(),
            time: st.opened.time.rfc3339(),
            frame: st.opened.frame.frame,
        },
        until: s.end.time.rfc3339(),
        last_progress: u.progress,
        client_gave_up: u.gave_up,
        session_went_on: u.went_on,
        still_open_at_capture_end: u.still_open,
        answer_may_be_in_missing_bytes: u.hidden.is_some(),
        cause: Cause {
            kind: why.kind,
            stream: why.stream.map(|i| s.streams[i].label()),
        },
        head,
    };
    let evidence = match kind {
        FindingKind::PendingAtCaptureEnd => crate::Evidence::PendingAtCaptureEnd(evidence),
        _ => crate::Evidence::UnansweredRequest(evidence),
    };
    New {
        kind,
        severity,
        time: s.end,
        frames: vec![st.opened, s.end],
        streams: vec![st.idx, u.channel],
        summary,
        evidence,
        caused_by: u.cause.into_iter().collect(),
        subject: Subject::Request(id.clone()),
    }
}

/// The evidence of an `unanswered_request` (and of a `pending_at_capture_end`): the request, how
/// long it waited and what became of the wait, and why the answer never came.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// As on the wire: `7` and `"7"` differ.
    pub request_id: RequestId,
    pub method: Option<String>,
    /// The tool a `tools/call` named.
    pub tool: Option<String>,
    /// From the request to the end of the session (or of the input), in seconds.
    pub waited_s: f64,
    pub sent: Sent,
    /// The end of the wait (RFC 3339).
    pub until: String,
    /// The last progress notification of the request's progress token, where it came.
    pub last_progress: Option<Progress>,
    pub client_gave_up: bool,
    pub session_went_on: bool,
    pub still_open_at_capture_end: bool,
    pub answer_may_be_in_missing_bytes: bool,
    pub cause: Cause,
    /// The summary before the cause (`request 7 tools/call "reindex" never answered (waited
    /// 12.6 s)`): a later detector that finds the cause says it after it.
    #[serde(skip)]
    head: String,
}

/// Where and when a request was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sent {
    pub stream: String,
    pub exchange: String,
    pub time: String,
    pub frame: u64,
}

/// A progress notification: where it came, and how far it said the work was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub stream: String,
    pub event_id: Option<String>,
    pub time: String,
    pub frame: u64,
    pub progress: Option<serde_json::Number>,
    pub total: Option<serde_json::Number>,
}

/// Why the answer never came: what the evidence shows, and the stream it rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    pub kind: CauseKind,
    pub stream: Option<String>,
}

/// What took the answer (docs/report-format.md, `unanswered_request`'s `cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// A resume replayed another namespace past it.
    SkippedByReplay,
    /// Another input shows the hop lost its stream's events.
    LostInTransit,
    AcceptedWithoutAnswer,
    SessionExpired,
    ConnectionReset,
    StreamReset,
    StreamRefused,
    ClientGaveUp,
    ServerClosed,
    SessionDeleted,
    NeverAnswered,
    /// Bytes are missing where it could have come: not determinable.
    BytesMissing,
    PendingAtCaptureEnd,
}

impl Evidence {
    /// The hop between two inputs lost the events of `stream`, where the answer was to come:
    /// the cause, and the summary that says it, unless a replay already explains it.
    pub(crate) fn lost_in_transit(&mut self, stream: String, text: &str) -> Option<String> {
        if self.cause.kind == CauseKind::SkippedByReplay {
            return None;
        }
        self.cause = Cause {
            kind: CauseKind::LostInTransit,
            stream: Some(stream),
        };
        Some(format!("{}: {text}", self.head))
    }
}

