//! The call profile: per server and per tool or method, how many calls, how they failed, how
//! many got no answer in the inputs, and how long answers took. What a live MCP monitor shows,
//! from the capture, so the SRE sees which tool was slow or failing when the incident began.
//!
//! Counted at each session record's own vantage point (a logical session seen at two hops is
//! counted once). Bounded: at most [`MAX_KEYS`] rows, then one more that counts the calls of
//! every other server and method (which ones it holds depends on the order sessions end in,
//! so past the cap the split between rows may differ from run to run; below it, never);
//! [`MAX_CODES`] JSON-RPC error codes a row; latencies exact up to [`EXACT_LATENCIES`] a row,
//! then kept as a histogram of 1/64 relative precision: the same numbers whatever order
//! sessions end in.

use std::collections::BTreeMap;

use crate::answers::AnswerIndex;
use crate::jsonrpc::{Kind, Message};
use crate::model::{Session, Stream};

/// Rows (server × method) the profile keeps; calls of others are counted in one more row.
pub const MAX_KEYS: usize = 1024;
/// JSON-RPC error codes a row tells apart; errors of other codes are counted as `None` (no code
/// told), as errors without a numeric code are.
pub const MAX_CODES: usize = 16;
/// Latencies kept exactly per row before it keeps a histogram.
pub const EXACT_LATENCIES: usize = 1024;
/// A tool or method name longer than this is cut (it names a row, and comes from the wire).
const MAX_NAME: usize = 80;

/// The row of a method named by nothing the inputs recorded: an access log or a HAR hole.
pub const BODY_NOT_RECORDED: &str = "(body not recorded)";
/// Where calls past [`MAX_KEYS`] rows are counted, as server and as method.
pub const OTHER_METHODS: &str = "(other methods)";
pub const OTHER_SERVERS: &str = "(other servers)";

/// One row: a server (address and endpoint) and a method (`tools/call reindex` for a tool).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CallKey {
    pub server: String,
    pub method: String,
}

/// What the calls of one row came to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calls {
    pub calls: u64,
    /// JSON-RPC error responses, by `error.code` (`None`: an error without a numeric code, or
    /// of a code past the [`MAX_CODES`] a row tells apart).
    pub jsonrpc_errors: BTreeMap<Option<i64>, u64>,
    /// `tools/call` results with `isError: true`.
    pub tool_errors: u64,
    /// HTTP statuses other than 2xx of the exchanges that carried the calls.
    pub http_errors: BTreeMap<u16, u64>,
    /// Calls whose answer the inputs do not hold (unanswered, still pending when the capture
    /// ended, or lost): a count, not a finding; `unanswered_request` is the finding.
    pub no_answer_seen: u64,
    latencies: Latencies,
}

/// The answered calls' latencies, from the request to its first answer.
#[derive(Clone, Debug, Default, PartialEq)]
struct Latencies {
    count: u64,
    /// Exact, as long as there are no more than [`EXACT_LATENCIES`].
    exact: Vec<u64>,
    /// Once there are more: counts by value rounded down to 7 significant bits.
    histogram: Option<BTreeMap<u64, u64>>,
    /// Exact always: the number an SRE quotes.
    max: u64,
}

/// Latency percentiles of a row, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
    /// From the histogram: each within 1/64 (rounded down), `max` exact.
    pub approximate: bool,
}

/// The profile of every session finalized so far.
#[derive(Clone, Debug, Default)]
pub struct CallProfile {
    rows: BTreeMap<CallKey, Calls>,
    /// Calls counted in an `(other methods)` row because the rows were full.
    pub folded_calls: u64,
}

impl CallProfile {
    /// Counts the calls of a finalized session (its streams and events still held), with the
    /// index of its answers the detectors made.
    pub fn add_session_with(&mut self, s: &Session, answers: &AnswerIndex<'_>) {
        let server = format!("{} {}", s.server, cut(&s.path));
        for st in &s.streams {
            self.add_stream(&server, st, answers);
        }
    }

    /// Adds the calls `other` counted (one session's, say): the same rows as if they had been
    /// counted here.
    pub fn merge(&mut self, other: CallProfile) {
        self.folded_calls += other.folded_calls;
        for (key, calls) in other.rows {
            self.row_of(key).add(calls);
        }
    }

    fn add_stream(&mut self, server: &str, st: &Stream, answers: &AnswerIndex<'_>) {
        let requests = st
            .client_messages
            .iter()
            .filter(|m| m.kind == Kind::Request);
        if requests.clone().next().is_none() {
            // A POST whose body the input did not record still asked something: its HTTP
            // status and time are known.
            if st.body_unknown && st.method == "POST" {
                let calls = self.row(server, BODY_NOT_RECORDED.to_string());
                calls.calls += 1;
                count_http(calls, st);
                match st.response_mark {
                    Some(r) => calls.latencies.add(elapsed(st.opened.time, r.time)),
                    None => calls.no_answer_seen += 1,
                }
            }
            return;
        }
        for m in requests {
            let calls = self.row(server, method_name(m));
            calls.calls += 1;
            count_http(calls, st);
            let Some(id) = &m.id else { continue };
            let first = answers
                .of(id)
                .iter()
                .find(|a| a.mark.time >= st.opened.time);
            match first {
                // An HTTP error status answered it (a 404 of a forgotten session): counted
                // there, not as unanswered.
                None if st.status.is_some_and(|c| c >= 400) => {}
                None => calls.no_answer_seen += 1,
                Some(a) => {
                    calls.latencies.add(elapsed(st.opened.time, a.mark.time));
                    match a.message.kind {
                        Kind::Error => calls.count_error(a.message.error_code()),
                        _ if a.message.mcp.tool_error => calls.tool_errors += 1,
                        _ => {}
                    }
                }
            }
        }
    }

    /// The row of `server` and `method`, or the one row of every other when the rows are
    /// full.
    fn row(&mut self, server: &str, method: String) -> &mut Calls {
        self.row_of(CallKey {
            server: server.to_string(),
            method,
        })
    }

    /// The row of `key`, or the one row of every other when the rows are full.
    fn row_of(&mut self, key: CallKey) -> &mut Calls {
        if self.rows.len() < MAX_KEYS || self.rows.contains_key(&key) {
            return self.rows.entry(key).or_default();
        }
        self.folded_calls += 1;
        let other = CallKey {
            server: OTHER_SERVERS.to_string(),
            method: OTHER_METHODS.to_string(),
        };
        self.rows.entry(other).or_default()
    }

    /// Every row, by server then method.
    pub fn rows(&self) -> impl Iterator<Item = (&CallKey, &Calls)> {
        self.rows.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

impl Calls {
    /// Adds another count of the same row's calls.
    fn add(&mut self, other: Calls) {
        self.calls += other.calls;
        for (code, n) in other.jsonrpc_errors {
            self.count_errors(code, n);
        }
        self.tool_errors += other.tool_errors;
        for (status, n) in other.http_errors {
            *self.http_errors.entry(status).or_default() += n;
        }
        self.no_answer_seen += other.no_answer_seen;
        self.latencies.merge(other.latencies);
    }

    /// An error response of this `code`: told apart while the row tells fewer than
    /// [`MAX_CODES`] apart.
    fn count_error(&mut self, code: Option<i64>) {
        self.count_errors(code, 1);
    }

    /// `n` error responses of this `code`.
    fn count_errors(&mut self, code: Option<i64>, n: u64) {
        let told = self.jsonrpc_errors.contains_key(&code) || self.jsonrpc_errors.len() < MAX_CODES;
        let code = if told { code } else { None };
        *self.jsonrpc_errors.entry(code).or_default() += n;
    }

    /// Calls that failed: JSON-RPC errors, `isError` results and HTTP errors (a call can be
    /// counted once per way it failed).
    pub fn errors(&self) -> u64 {
        self.jsonrpc_errors.values().sum::<u64>()
            + self.tool_errors
            + self.http_errors.values().sum::<u64>()
    }

    /// The answered calls' latency percentiles; none when no call was answered.
    pub fn latency(&self) -> Option<Percentiles> {
        self.latencies.percentiles()
    }
}

fn count_http(calls: &mut Calls, st: &Stream) {
    if let Some(status) = st.status
        && !(200..300).contains(&status)
    {
        *calls.http_errors.entry(status).or_default() += 1;
    }
}

/// `tools/call reindex` for a tool call, else the method.
fn method_name(m: &Message) -> String {
    let method = m.method.as_deref().unwrap_or("?");
    match (&m.mcp.tool, method) {
        (Some(tool), "tools/call") => format!("tools/call {}", cut(tool)),
        _ => cut(method),
    }
}

fn cut(text: &str) -> String {
    // No more bytes than the characters allowed: nothing to cut, no need to count them.
    if text.len() <= MAX_NAME {
        return text.to_string();
    }
    match text.char_indices().nth(MAX_NAME) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

impl Latencies {
    fn add(&mut self, ns: u64) {
        self.max = self.max.max(ns);
        self.count += 1;
        if let Some(h) = &mut self.histogram {
            *h.entry(rounded(ns)).or_default() += 1;
            return;
        }
        self.exact.push(ns);
        if self.exact.len() > EXACT_LATENCIES {
            self.histogram();
        }
    }

    /// The histogram, made of the exact latencies if they are still kept.
    fn histogram(&mut self) -> &mut BTreeMap<u64, u64> {
        let exact = &mut self.exact;
        self.histogram.get_or_insert_with(|| {
            let mut h = BTreeMap::new();
            for v in std::mem::take(exact) {
                *h.entry(rounded(v)).or_default() += 1;
            }
            h
        })
    }

    /// Adds another row's latencies: exact while both are and together they fit, else the
    /// histogram of all, as adding them one by one would give.
    fn merge(&mut self, other: Latencies) {
        match (&other.histogram, other.count) {
            (_, 0) => {}
            (None, _) => {
                for v in other.exact {
                    self.add(v);
                }
            }
            (Some(h), _) => {
                let mine = self.histogram();
                for (&v, &n) in h {
                    *mine.entry(v).or_default() += n;
                }
                self.count += other.count;
                self.max = self.max.max(other.max);
            }
        }
    }

    /// Nearest-rank percentiles (the value below which p% of the calls' latencies are).
    fn percentiles(&self) -> Option<Percentiles> {
        if self.count == 0 {
            return None;
        }
        let rank = |p: u64| (self.count * p).div_ceil(100).max(1);
        let at = |p: u64| -> u64 {
            match &self.histogram {
                None => {
                    let mut sorted = self.exact.clone();
                    sorted.sort_unstable();
                    sorted[(rank(p) - 1) as usize]
                }
                Some(h) => {
                    let mut seen = 0;
                    for (&v, &n) in h {
                        seen += n;
                        if seen >= rank(p) {
                            return v;
                        }
                    }
                    self.max
                }
            }
        };
        Some(Percentiles {
            count: self.count,
            p50: at(50),
            p95: at(95),
            p99: at(99),
            max: self.max,
            approximate: self.histogram.is_some(),
        })
    }
}

/// `ns` with all but its 7 most significant bits cleared: within 1/64 below it.
fn rounded(ns: u64) -> u64 {
    let bits = 64 - ns.leading_zeros();
    match bits.checked_sub(7) {
        Some(drop) if drop > 0 => ns >> drop << drop,
        _ => ns,
    }
}

/// Nanoseconds from `from` to `to`, none when `to` is earlier (clocks of two inputs).
fn elapsed(from: mcpf_model::Timestamp, to: mcpf_model::Timestamp) -> u64 {
    u64::try_from(to.0.saturating_sub(from.0)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_and_exact_under_the_cap() {
        let mut l = Latencies::default();
        for v in 1..=100 {
            l.add(v * 1_000_000);
        }
        let p = l.percentiles().unwrap();
        assert_eq!(
            (p.count, p.p50, p.p95, p.p99, p.max, p.approximate),
            (100, 50_000_000, 95_000_000, 99_000_000, 100_000_000, false)
        );
        let mut one = Latencies::default();
        one.add(7);
        let p = one.percentiles().unwrap();
        assert_eq!((p.p50, p.p99, p.max), (7, 7, 7));
        assert_eq!(Latencies::default().percentiles(), None);
    }

    #[test]
    fn past_the_cap_a_histogram_within_one_64th_whatever_the_order() {
        let values: Vec<u64> = (0..5_000u64)
            .map(|i| (i * 7_919) % 5_000 * 1_000 + 1)
            .collect();
        let mut a = Latencies::default();
        let mut b = Latencies::default();
        for &v in &values {
            a.add(v);
        }
        for &v in values.iter().rev() {
            b.add(v);
        }
        let (pa, pb) = (a.percentiles().unwrap(), b.percentiles().unwrap());
        assert_eq!(pa, pb);
        assert!(pa.approximate);
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let exact = sorted[(5_000 * 95usize).div_ceil(100) - 1];
        assert!(
            pa.p95 <= exact && exact - pa.p95 <= exact / 64,
            "{pa:?} {exact}"
        );
        assert_eq!(pa.max, *sorted.last().unwrap());
    }

    #[test]
    fn rounding_keeps_seven_significant_bits() {
        assert_eq!(rounded(100), 100);
        assert_eq!(rounded(0b1111_1111), 0b1111_1110);
        assert_eq!(rounded(1_000_000_007) >> 23, 1_000_000_007 >> 23);
    }

    #[test]
    fn merged_counts_are_those_counted_in_one_place() {
        let values: Vec<u64> = (0..3_000u64)
            .map(|i| (i * 7_919) % 3_000 * 997 + 5)
            .collect();
        for split in [0, 10, 1_000, 1_500, 2_990] {
            let mut whole = Latencies::default();
            values.iter().for_each(|&v| whole.add(v));
            let (mut a, mut b) = (Latencies::default(), Latencies::default());
            values[..split].iter().for_each(|&v| a.add(v));
            values[split..].iter().for_each(|&v| b.add(v));
            a.merge(b);
            assert_eq!(a.percentiles(), whole.percentiles(), "split at {split}");
        }
        let (mut one, mut two) = (CallProfile::default(), CallProfile::default());
        fn row(p: &mut CallProfile) -> &mut Calls {
            p.row("s /mcp", "tools/call x".into())
        }
        row(&mut one).calls += 2;
        row(&mut one).count_error(Some(-32603));
        row(&mut two).calls += 3;
        row(&mut two).count_errors(Some(-32603), 2);
        row(&mut two).http_errors.insert(502, 1);
        one.merge(two);
        let merged = one.rows().next().unwrap().1;
        assert_eq!(merged.calls, 5);
        assert_eq!(merged.jsonrpc_errors[&Some(-32603)], 3);
        assert_eq!(merged.errors(), 4);
    }

    #[test]
    fn rows_and_error_codes_are_bounded() {
        let mut p = CallProfile::default();
        for i in 0..MAX_KEYS + 10 {
            p.row(&format!("server {i}"), "tools/list".into()).calls += 1;
        }
        assert_eq!(p.rows().count(), MAX_KEYS + 1);
        assert_eq!(p.folded_calls, 10);
        let mut c = Calls::default();
        for code in 0..100 {
            c.count_error(Some(code));
        }
        c.count_error(Some(3));
        assert_eq!(c.jsonrpc_errors.len(), MAX_CODES + 1);
        assert_eq!(c.jsonrpc_errors[&Some(3)], 2);
        assert_eq!(c.jsonrpc_errors[&None], 100 - MAX_CODES as u64);
        assert_eq!(c.errors(), 101);
    }

    #[test]
    fn names_from_the_wire_are_cut() {
        assert_eq!(cut("short"), "short");
        let long = "x".repeat(200);
        assert_eq!(cut(&long).chars().count(), MAX_NAME + 1);
    }
}
