//! `session_not_found`: a request of a live session answered 404. A 404 to a request that names
//! a session means the server does not know it; that is right once the session was deleted or
//! expired, and wrong while the session goes on: an exchange naming it answered 2xx after the 404
//! was sent, or an event stream of it open across it. Behind a balancer without stickiness the
//! replica that did not mint the session answers so while the other serves it (the server leg then
//! shows the two replicas as two observations of the session ID; both are searched, in the same
//! input so on the same clock). One finding per session ID and input, on the observation that
//! holds the first such 404, listing them all, with the client's reaction: whether it kept using the session, started a new one on the same
//! connection, or was not seen again.

use super::{FindingKind, Findings, KindInfo, New, Severity, Subject};
use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::{Session, SessionIdx, Stream, session_label};
use mcpf_model::{InputId, Mark};

pub(crate) const INFO: KindInfo = KindInfo {
    kind: FindingKind::SessionNotFound,
    severity: Severity::High,
    when: "a request or resume of a live session answered 404 (\"Session not found\") while the session goes on: an exchange naming it answered 2xx after, or one of its event streams open across it",
    meaning: "A server answered that it does not know a session that was alive: typically another replica behind a balancer without stickiness (it never saw the session), or a replica that restarted while its peer kept the session.",
    why: "The client's request failed for no fault of its own; the SDKs surface it as an error (\"Session terminated\", \"Session not found\") and most keep using the session, so calls fail at random, and a resume answered 404 loses the stream.",
    fix: "Balancer: route by Mcp-Session-Id (hash on the header, or a sticky cookie), or share session state between replicas. Client: on 404, initialize a new session as the spec says.",
    requires: &[],
};

/// Rejected requests listed in the evidence; `rejected` counts them all.
const LISTED: usize = 20;

/// Runs once on every observation of one session ID at hand (a lone session is a group of one):
/// the observations of one input (one clock) are searched together, since the evidence that
/// the session was alive may be in another (another replica). Returns the findings' handles
/// with their sessions.
pub(crate) fn detect_group(group: &[&Session], f: &mut Findings) -> Vec<(SessionIdx, usize)> {
    let mut done: Vec<(&str, &[mcpf_model::InputId])> = Vec::new();
    let mut added = Vec::new();
    for s in group {
        let Some(sid) = s.session_id.as_deref() else {
            continue;
        };
        if done.contains(&(sid, s.inputs.as_slice())) {
            continue;
        }
        done.push((sid, s.inputs.as_slice()));
        let same_clock: Vec<&Session> = group
            .iter()
            .copied()
            .filter(|o| o.session_id.as_deref() == Some(sid) && o.inputs == s.inputs)
            .collect();
        if let Some(h) = detect_one(&same_clock, sid, f) {
            added.push(h);
        }
    }
    added
}

/// The observations of one session ID on one clock: one finding, on the one holding the first
/// 404 the session outlived.
fn detect_one(obs: &[&Session], sid: &str, f: &mut Findings) -> Option<(SessionIdx, usize)> {
    let alive = Alive::of(obs, sid);
    let mut rejected: Vec<(&Session, &Stream, Mark, &Session, &Stream)> = obs
        .iter()
        .flat_map(|o| o.streams.iter().map(move |st| (*o, st)))
        .filter(|(_, st)| st.status == Some(404) && st.session_id_sent.as_deref() == Some(sid))
        .filter_map(|(o, st)| {
            let at = st.response_mark.unwrap_or(st.opened);
            let (p, proof) = alive.at(st.opened, at)?;
            Some((o, st, at, p, proof))
        })
        .collect();
    rejected.sort_by_key(|r| (r.2.time, r.0.idx, r.1.idx));
    let &(holder, first, at, o, proof) = rejected.first()?;
    let s = holder;
    let listed: Vec<Listed> = rejected
        .iter()
        .take(LISTED)
        .map(|r| Listed {
            request: Request::of(r.1),
            session: session_label(r.0.idx),
        })
        .collect();
    let serving: Vec<String> = served(obs, sid);
    let reaction = reaction(s, obs, sid, first);
    let h = f.add(
        s,
        New {
            kind: FindingKind::SessionNotFound,
            severity: INFO.severity,
            time: at,
            frames: vec![first.opened, at, proof.opened],
            streams: vec![first.idx],
            summary: format!(
                "{} {} of the live session answered 404 by {}{} (the session went on: {} {} answered {} at {}){}",
                first.method,
                what(first),
                server_of(first),
                if rejected.len() > 1 {
                    format!(", and {} more requests", rejected.len() - 1)
                } else {
                    String::new()
                },
                proof.method,
                if o.idx == s.idx {
                    proof.label()
                } else {
                    format!("{} of {} at {}", proof.label(), session_label(o.idx), server_of(proof))
                },
                proof.status.unwrap_or(0),
                proof.opened.time.clock_millis(),
                reaction_note(&reaction),
            ),
            evidence: crate::Evidence::SessionNotFound(Evidence {
                request: Request::of(first),
                status: 404,
                servers: Servers {
                    answered_404: first.server.to_string(),
                    upstream_404: first.upstream.clone(),
                    serving,
                },
                alive_by: AliveBy {
                    session: session_label(o.idx),
                    stream: proof.label(),
                    server: proof.server.to_string(),
                    status: proof.status,
                    time: proof.opened.time.rfc3339(),
                    frame: proof.opened.frame.frame,
                    input: proof.opened.frame.input,
                },
                client_reaction: reaction,
                rejected: rejected.len(),
                listed,
            }),
            caused_by: Vec::new(),
            subject: Subject::Stream(first.idx),
        },
    );
    Some((s.idx, h))
}

/// What shows the session alive at a moment, indexed once: the exchanges naming it that were
/// answered 2xx, by when they began, and its event streams answered 2xx, by when they began with
/// the latest end among those begun so far; and when it was deleted, if it was.
struct Alive<'a> {
    answered: Vec<(i64, &'a Session, &'a Stream)>,
    /// (began, latest end of those begun by then, the stream that ends latest).
    streams: Vec<(i64, i64, &'a Session, &'a Stream)>,
    deleted: Option<i64>,
    /// When an `initialize` minted the ID (again, for a server that hands out one ID twice):
    /// what is answered after it is that new session's.
    minted: Vec<i64>,
}

impl<'a> Alive<'a> {
    fn of(obs: &[&'a Session], sid: &str) -> Alive<'a> {
        let named = || {
            obs.iter()
                .flat_map(|o| o.streams.iter().map(move |st| (*o, st)))
                .filter(|(_, st)| {
                    st.session_id_sent.as_deref() == Some(sid)
                        && st.status.is_some_and(|c| (200..300).contains(&c))
                })
        };
        let mut answered: Vec<_> = named().map(|(o, st)| (st.opened.time.0, o, st)).collect();
        answered.sort_by_key(|a| (a.0, a.1.idx, a.2.idx));
        let mut spans: Vec<_> = named()
            .filter(|(_, st)| st.event_stream)
            .map(|(o, st)| {
                (
                    st.opened.time.0,
                    st.ended.map_or(i64::MAX, |e| e.time.0),
                    o,
                    st,
                )
            })
            .collect();
        spans.sort_by_key(|a| (a.0, a.2.idx, a.3.idx));
        let mut latest: Option<(i64, &Session, &Stream)> = None;
        let streams = spans
            .into_iter()
            .map(|(began, end, o, st)| {
                if latest.is_none_or(|l| end > l.0) {
                    latest = Some((end, o, st));
                }
                let (end, o, st) = latest.unwrap_or((end, o, st));
                (began, end, o, st)
            })
            .collect();
        let deleted = obs
            .iter()
            .filter_map(|o| o.first_deletion())
            .map(|d| d.time.0)
            .min();
        let mut minted: Vec<i64> = obs
            .iter()
            .flat_map(|o| o.streams.iter())
            .filter(|st| {
                st.session_id_received.as_deref() == Some(sid)
                    && st.session_id_sent.is_none()
                    && st.status.is_some_and(|c| (200..300).contains(&c))
            })
            .map(|st| st.opened.time.0)
            .collect();
        minted.sort_unstable();
        Alive {
            answered,
            streams,
            deleted,
            minted,
        }
    }

    /// The exchange that shows the session alive for a request sent at `sent` and answered at
    /// `at`: one naming it sent after and answered 2xx, or an event stream of it open across;
    /// none once the session was deleted before.
    fn at(&self, sent: Mark, at: Mark) -> Option<(&'a Session, &'a Stream)> {
        if self.deleted.is_some_and(|d| d < sent.time.0) {
            return None;
        }
        let after = self.answered.partition_point(|a| a.0 <= at.time.0);
        let reminted = self
            .minted
            .get(self.minted.partition_point(|&m| m <= at.time.0));
        if let Some(&(began, o, st)) = self.answered.get(after)
            && reminted.is_none_or(|&m| began < m)
        {
            return Some((o, st));
        }
        let begun = self.streams.partition_point(|x| x.0 <= sent.time.0);
        let &(_, end, o, st) = self.streams.get(begun.checked_sub(1)?)?;
        (end > at.time.0).then_some((o, st))
    }
}

/// The exchange is one of the session's: it named it, or minted it.
fn names(st: &Stream, sid: &str) -> bool {
    st.session_id_sent.as_deref() == Some(sid) || st.session_id_received.as_deref() == Some(sid)
}

/// The servers that answered the session 2xx.
fn served(obs: &[&Session], sid: &str) -> Vec<String> {
    let mut out: Vec<String> = obs
        .iter()
        .flat_map(|o| o.streams.iter())
        .filter(|st| names(st, sid) && st.status.is_some_and(|c| (200..300).contains(&c)))
        .map(server_of)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What the client did after the first 404: went on naming the session, initialized a new one
/// on the same TCP connection, or was not seen again in this input.
fn reaction(s: &Session, obs: &[&Session], sid: &str, first: &Stream) -> ClientReaction {
    let after = |st: &&Stream| st.opened.time > first.opened.time;
    let later = obs
        .iter()
        .flat_map(|o| o.streams.iter())
        .filter(after)
        .filter(|st| st.session_id_sent.as_deref() == Some(sid))
        .count();
    let reinit = s
        .streams
        .iter()
        .filter(after)
        .any(|st| st.exchange.conn == first.exchange.conn && st.session_id_sent.is_none());
    let what = if later > 0 {
        Reaction::KeptGoing
    } else if reinit {
        Reaction::Reinitialized
    } else {
        Reaction::NotSeenAgain
    };
    ClientReaction {
        what,
        later_requests_naming_the_session: later,
    }
}

fn reaction_note(reaction: &ClientReaction) -> String {
    match reaction.what {
        Reaction::KeptGoing => "; the client kept using the session".into(),
        Reaction::Reinitialized => "; the client initialized a new session".into(),
        Reaction::NotSeenAgain => String::new(),
    }
}

/// The server that answered: the upstream a proxy's log names, else the address.
fn server_of(st: &Stream) -> String {
    st.upstream.clone().unwrap_or_else(|| st.server.to_string())
}

fn what(st: &Stream) -> String {
    match st.client_messages.first() {
        Some(m) => match (&m.method, &m.id) {
            (Some(method), Some(id)) => format!("{method} {}", id.label()),
            (Some(method), None) => method.to_string(),
            _ => st.label(),
        },
        None if st.resume.is_some() => "resume".into(),
        None => st.label(),
    }
}

impl Request {
    fn of(st: &Stream) -> Request {
        Request {
            stream: st.label(),
            method: st.method.clone(),
            jsonrpc: st.client_messages.first().map(|m| JsonRpc {
                method: m.method.as_deref().map(str::to_string),
                id: m.id.clone(),
            }),
            last_event_id: st.resume.as_ref().map(|r| r.last_event_id.clone()),
            server: st.server.to_string(),
            time: st.opened.time.rfc3339(),
            frame: st.opened.frame.frame,
        }
    }
}

/// The evidence of a `session_not_found`: the first request of the live session answered 404,
/// the servers that did and did not know the session, the exchange that shows it alive, what
/// the client did next, and every such request.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evidence {
    /// The first request answered 404 while the session went on.
    pub request: Request,
    /// Always 404.
    pub status: u16,
    pub servers: Servers,
    /// The exchange that shows the session alive across the 404.
    pub alive_by: AliveBy,
    pub client_reaction: ClientReaction,
    /// How many requests of the live session were answered 404.
    pub rejected: usize,
    /// The first 20 of them.
    pub listed: Vec<Listed>,
}

/// A request naming the session: its stream, what it carried and where it went.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Request {
    pub stream: String,
    /// The HTTP method.
    pub method: String,
    /// The first JSON-RPC message of its body, if it had one.
    pub jsonrpc: Option<JsonRpc>,
    /// The `Last-Event-ID` of a resume.
    pub last_event_id: Option<String>,
    /// The server address it was sent to.
    pub server: String,
    pub time: String,
    pub frame: u64,
}

/// A JSON-RPC message by its method and ID.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JsonRpc {
    pub method: Option<String>,
    /// As on the wire: `7` and `"7"` differ.
    pub id: Option<RequestId>,
}

/// The servers of the session: the one that answered 404, and those that answered it 2xx.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Servers {
    /// The address that answered the first 404.
    pub answered_404: String,
    /// The upstream a proxy's log names for it.
    pub upstream_404: Option<String>,
    /// The servers (upstream, else address) that answered the session 2xx.
    pub serving: Vec<String>,
}

/// The exchange that shows the session alive: one naming it answered 2xx after the 404, or an
/// event stream of it open across it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AliveBy {
    /// The observation of the session that holds it (another replica's, perhaps).
    pub session: String,
    pub stream: String,
    pub server: String,
    pub status: Option<u16>,
    /// When it was sent.
    pub time: String,
    pub frame: u64,
    pub input: InputId,
}

/// What the client did after the first 404.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClientReaction {
    pub what: Reaction,
    pub later_requests_naming_the_session: usize,
}

/// What the client did after the first 404.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reaction {
    /// Later requests named the session.
    KeptGoing,
    /// An `initialize` on the same TCP connection.
    Reinitialized,
    /// Not seen again in this input.
    NotSeenAgain,
}

/// A request answered 404, with the observation of the session it is in.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Listed {
    #[serde(flatten)]
    pub request: Request,
    pub session: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_request_is_the_request_with_its_session_last_and_reads_back() {
        let text = r#"{"stream":"post:s2","method":"POST","jsonrpc":{"method":"tools/call","id":7},"last_event_id":null,"server":"127.0.0.1:18303","time":"t","frame":14,"session":"S1"}"#;
        let listed: Listed = serde_json::from_str(text).unwrap();
        assert_eq!(listed.session, "S1");
        assert_eq!(
            listed.request.jsonrpc.as_ref().and_then(|m| m.id.clone()),
            Some(RequestId::Number("7".into()))
        );
        assert_eq!(serde_json::to_string(&listed).unwrap(), text);
    }
}
