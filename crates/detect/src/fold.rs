//! One logical session from its observations: the same `Mcp-Session-Id` seen at several vantage
//! points (both legs of a proxy, the replicas behind a balancer, two inputs) is one session, and
//! each of its findings is stated once.
//!
//! Every observation was analysed on its own. Here the one nearest the client (what the client
//! lived through) becomes the session's record; a finding another vantage point also made is
//! folded into it, its frames kept as that vantage point's evidence; a finding only another
//! vantage point could make (what the server sent and the proxy never passed on, a replica's own
//! replay) moves to the record as it is, its frames naming their input.
//!
//! Two findings are the same when they are of one kind about one subject, the subject named in
//! the protocol's terms: a request ID, or a stream by what its request carried (its JSON-RPC
//! messages, a GET's `Last-Event-ID`), never by a stream's position at one vantage point.

use mcpf_mcp::AnswerIndex;
use mcpf_mcp::jsonrpc::RequestId;
use mcpf_mcp::model::{Session, SessionIdx};
use rustc_hash::FxHashMap as HashMap;

use crate::FindingKind;
use crate::finding::{Findings, SeenAt, Subject};
use crate::lost_in_transit::{Key, stream_keys};
use crate::verdict::Verdict;

/// A subject as every vantage point names it. A stream without a key (one of a source merged
/// into the session) names nothing another vantage point could name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Across {
    Stream(Key),
    FallbackTo(Key),
    Resume(Key),
    Namespace(Key),
    Request(RequestId),
    RequestOn(RequestId, Key),
    Retry(Key),
}

impl Across {
    fn of(subject: &Subject, keys: &[Option<Key>]) -> Option<Across> {
        let key = |i: usize| keys.get(i).cloned().flatten();
        Some(match subject {
            Subject::Stream(i) => Across::Stream(key(*i)?),
            Subject::FallbackTo(i) => Across::FallbackTo(key(*i)?),
            Subject::Resume(i) => Across::Resume(key(*i)?),
            Subject::Namespace(i) => Across::Namespace(key(*i)?),
            Subject::Request(id) => Across::Request(id.clone()),
            Subject::RequestOn(id, i) => Across::RequestOn(id.clone(), key(*i)?),
            Subject::Retry(i) => Across::Retry(key(*i)?),
        })
    }
}

/// A finding's identity across vantage points: its kind, its subject, and which of the
/// findings of that kind about that subject it is at its own vantage point.
type Identity = (FindingKind, Across, u32);

/// Folds the observations of one session (`sessions`, each with its verdict and findings in
/// `out`) into the one nearest the client, whose position it returns: the others are left with
/// no finding, and their findings are folded, moved or withdrawn. `hops`: pairs of observations
/// whose order the hop comparison proved, the one nearer the client first.
pub(crate) fn fold(
    sessions: &[&Session],
    hops: &[(SessionIdx, SessionIdx)],
    out: &mut [(Verdict, Vec<usize>)],
    f: &mut Findings,
) -> usize {
    if sessions.len() < 2 {
        return 0;
    }
    let primary = nearest_client(sessions, hops);
    let answers: Vec<AnswerIndex<'_>> = sessions.iter().map(|s| AnswerIndex::new(s)).collect();
    // The stated record's own absences stand, unless a record of the same vantage point holds
    // the answer (a late exchange of it filed as a record of its own).
    let own = sessions[primary].vantage();
    let same: Vec<usize> = (0..sessions.len())
        .filter(|&i| i != primary && sessions[i].vantage() == own)
        .collect();
    out[primary]
        .1
        .retain(|&h| !answered_at(f, h, &same, &answers));
    let mut known: HashMap<Identity, usize> = HashMap::default();
    let keys = stream_keys(sessions[primary]);
    for (id, h) in identities(&out[primary].1, &keys, f) {
        if let Some(id) = id {
            known.entry(id).or_insert(h);
        }
    }
    for at in (0..sessions.len()).filter(|&at| at != primary) {
        let keys = stream_keys(sessions[at]);
        let mut theirs = std::mem::take(&mut out[at].1);
        let others: Vec<usize> = (0..sessions.len()).filter(|&i| i != at).collect();
        theirs.retain(|&h| !answered_at(f, h, &others, &answers));
        for (id, h) in identities(&theirs, &keys, f) {
            if let Some(&into) = id.as_ref().and_then(|id| known.get(id)) {
                fold_into(f, h, into);
                continue;
            }
            move_to(f, h, sessions[primary]);
            out[primary].1.push(h);
            if let Some(id) = id {
                known.insert(id, h);
            }
        }
        if rank(&out[at].0) > rank(&out[primary].0) {
            out[primary].0 = out[at].0.clone();
        }
    }
    primary
}

/// A request finding `h` calls unanswered, answered in one of the observations `at` (the answer
/// came on a replica it was not sent to, on the leg its own vantage point did not capture, or in
/// a late exchange filed as a record of its own): the absence was not the session's, and the
/// finding is withdrawn.
fn answered_at(f: &mut Findings, h: usize, at: &[usize], answers: &[AnswerIndex<'_>]) -> bool {
    let x = &f.list[h];
    let absent = matches!(
        x.kind,
        FindingKind::UnansweredRequest | FindingKind::PendingAtCaptureEnd
    );
    let Subject::Request(id) = &x.subject else {
        return false;
    };
    let answered = absent && at.iter().any(|&i| !answers[i].of(id).is_empty());
    if answered {
        f.list[h].withdrawn = true;
    }
    answered
}

/// The observation nearest the client: one the hop comparison never found nearer the server
/// than another, the first of them; the first observation when nothing proved an order.
fn nearest_client(sessions: &[&Session], hops: &[(SessionIdx, SessionIdx)]) -> usize {
    let far = |s: &&Session| hops.iter().any(|&(_, f)| f == s.idx);
    let near = |s: &&Session| hops.iter().any(|&(n, _)| n == s.idx);
    sessions
        .iter()
        .position(|s| near(s) && !far(s))
        .or_else(|| sessions.iter().position(|s| !far(s)))
        .unwrap_or(0)
}

/// Each finding with its identity; none when its subject names nothing the other vantage
/// points can name (it then stands on its own).
fn identities(
    handles: &[usize],
    keys: &[Option<Key>],
    f: &Findings,
) -> Vec<(Option<Identity>, usize)> {
    let mut nth: HashMap<(FindingKind, Across), u32> = HashMap::default();
    let mut out = Vec::with_capacity(handles.len());
    for &h in handles {
        let x = &f.list[h];
        let id = Across::of(&x.subject, keys).map(|across| {
            let n = nth.entry((x.kind, across.clone())).or_default();
            *n += 1;
            (x.kind, across, *n - 1)
        });
        out.push((id, h));
    }
    out
}

/// Another vantage point's sight of finding `into`: its frames become evidence of `into`, its
/// causes causes of `into` (each is itself folded or moved), and it is reported no more.
fn fold_into(f: &mut Findings, h: usize, into: usize) {
    let seen = SeenAt::of(&f.list[h]);
    let also = std::mem::take(&mut f.list[h].seen_at);
    let causes = f.list[h].caused_by.clone();
    f.list[h].folded_into = Some(into);
    let target = &mut f.list[into];
    target.seen_at.push(seen);
    target.seen_at.extend(also);
    for c in causes {
        if c != into && !target.caused_by.contains(&c) {
            target.caused_by.push(c);
        }
    }
}

/// A finding only another vantage point made: it joins the logical session's record as it is,
/// its vantage point and frames its own.
fn move_to(f: &mut Findings, h: usize, primary: &Session) {
    let x = &mut f.list[h];
    x.session = primary.idx;
    x.labels.session_label = primary.label();
}

/// How much a verdict says: unsafe (a finding proves it) over safe (the resumes were seen and
/// continued) over unknown over not attempted (no resume seen at that vantage point).
fn rank(v: &Verdict) -> u8 {
    match v.verdict {
        "unsafe" => 3,
        "safe" => 2,
        "unknown" => 1,
        _ => 0,
    }
}
