//! JSON-RPC 2.0 envelopes, read without materialising more than the fields an analyst needs.
//!
//! Request IDs keep their JSON type (`1` and `"1"` are different IDs, as the spec and every SDK
//! bug about `str(id)` collisions require). Anything that is not valid JSON-RPC is kept as
//! [`Kind::Malformed`] with the reason, never an error.

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use memchr::memmem;
use serde::Serialize;

#[cfg(test)]
mod differential;
mod envelope;
mod scan;
mod serde_reader;

/// Longest payload text (tool arguments, results, error data) kept per message; beyond it the
/// text is cut and marked. JSON reports print what was kept.
pub(crate) const MAX_PAYLOAD_TEXT: usize = 256 * 1024;

/// A JSON-RPC request ID exactly as it appeared on the wire.
///
/// A number is kept as its JSON text and printed as that text. Two numbers are the same ID when
/// they are the same number exactly (`-0` and `0`, `1e2` and `100`: a server that parses the ID
/// and writes it back may change its spelling, never its value), compared digit by digit, never
/// through a double (`18446744073709551616` and `18446744073709551617` stay two IDs). A number
/// is never the same ID as a string.
#[derive(Clone, Debug)]
pub enum RequestId {
    /// A number, kept as its JSON text.
    Number(String),
    String(String),
}

impl RequestId {
    /// What identifies it: the number's exact value in one spelling, or the string.
    fn key(&self) -> (u8, Cow<'_, str>) {
        match self {
            RequestId::Number(n) => (0, canonical_number(n)),
            RequestId::String(s) => (1, Cow::Borrowed(s)),
        }
    }

    /// The JSON text of the ID: `7` or `"7"`.
    pub fn json(&self) -> String {
        match self {
            RequestId::Number(n) => n.clone(),
            RequestId::String(s) => serde_json::to_string(s).unwrap_or_default(),
        }
    }

    /// A short label for tables: `7` or `"7"` (strings keep quotes so the type shows).
    pub fn label(&self) -> String {
        self.json()
    }

    /// The ID in a JSON report: the number itself when JSON's numbers give back exactly the
    /// text sent, else (a number past 64 bits, `-0`, `1e400`, `1E5`) `{"number": "<its text>"}`,
    /// so that no two IDs print alike and none prints as `null`.
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            RequestId::Number(n) => match serde_json::from_str::<serde_json::Number>(n) {
                Ok(v) if v.to_string() == *n => serde_json::Value::Number(v),
                _ => serde_json::json!({ "number": n }),
            },
            RequestId::String(s) => serde_json::Value::String(s.clone()),
        }
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for RequestId {}

impl std::hash::Hash for RequestId {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

impl PartialOrd for RequestId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RequestId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Longest decimal exponent read exactly; a number with a longer one is compared as spelled.
const MAX_EXPONENT_DIGITS: usize = 15;
/// Integers up to this many digits are spelled out in full; larger values in scientific form.
const MAX_PLAIN_DIGITS: i64 = 64;

/// One spelling of a JSON number's exact value: an integer in plain digits (`-0`, `0.0` and
/// `0e5` are `0`; `1e2` and `100.00` are `100`), anything else as `[-]0.<digits>e<exponent>`
/// with no leading or trailing zero digit. The usual ID (`7`) is its own spelling and costs no
/// copy. Text that is not a JSON number is its own spelling.
fn canonical_number(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    if !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b.len() == 1 || b[0] != b'0') {
        return Cow::Borrowed(text);
    }
    canonical_slow(text).map_or(Cow::Borrowed(text), Cow::Owned)
}

fn canonical_slow(text: &str) -> Option<String> {
    let (neg, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, "0"),
    };
    let exp_digits = exp.trim_start_matches(['+', '-']);
    if exp_digits.is_empty() || exp_digits.len() > MAX_EXPONENT_DIGITS {
        return None;
    }
    let exp: i64 = exp.trim_start_matches('+').parse().ok()?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !(int.bytes().chain(frac.bytes())).all(|c| c.is_ascii_digit()) {
        return None;
    }
    // The value is 0.<digits> × 10^point.
    let all: String = int.chars().chain(frac.chars()).collect();
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all[lead..].trim_end_matches('0');
    if digits.is_empty() {
        return Some("0".into());
    }
    let point = int.len() as i64 + exp - lead as i64;
    let sign = if neg { "-" } else { "" };
    let n = digits.len() as i64;
    Some(if point >= n && point <= MAX_PLAIN_DIGITS {
        format!("{sign}{digits}{}", "0".repeat((point - n) as usize))
    } else {
        format!("{sign}0.{digits}e{point}")
    })
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.json())
    }
}

impl Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

/// A request ID read back from a report: a JSON number (its text kept), a string, or the
/// `{"number": "<text>"}` of a number JSON's doubles cannot hold ([`RequestId::to_value`]).
impl<'de> serde::Deserialize<'de> for RequestId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) => Ok(RequestId::Number(n.to_string())),
            serde_json::Value::String(s) => Ok(RequestId::String(s)),
            serde_json::Value::Object(o) if o.len() == 1 && o["number"].is_string() => Ok(
                RequestId::Number(o["number"].as_str().unwrap_or_default().to_string()),
            ),
            other => Err(serde::de::Error::custom(format!(
                "a request ID is a number or a string, not {other}"
            ))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Request,
    Notification,
    Response,
    Error,
    Malformed,
}

/// What an analyst needs of one JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub kind: Kind,
    pub id: Option<RequestId>,
    /// `"id": null` was present (error responses to unparseable requests).
    pub null_id: bool,
    /// Common MCP method names are shared, not allocated per message.
    pub method: Option<Cow<'static, str>>,
    /// Kept apart: most messages are neither errors nor malformed, and every message of an
    /// event is held while its session is analysed.
    pub(crate) fault: Option<Box<Fault>>,
    pub mcp: Details,
}

/// The error object of an error response, or why a payload is not JSON-RPC.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) code: Option<i64>,
    pub(crate) message: Option<String>,
    pub(crate) malformed: Option<String>,
}

impl Fault {
    /// Boxed, or nothing when there is nothing to keep.
    pub(crate) fn boxed(
        code: Option<i64>,
        message: Option<String>,
        malformed: Option<String>,
    ) -> Option<Box<Fault>> {
        let f = Fault {
            code,
            message,
            malformed,
        };
        (f != Fault::default()).then(|| Box::new(f))
    }
}

/// MCP-specific fields of a message, allocated only when it has some: most events carry none,
/// and an analysis holds every event of the sessions in progress.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Details(pub(crate) Option<Box<McpDetails>>);

static NO_DETAILS: McpDetails = McpDetails {
    progress_token: None,
    progress: None,
    total: None,
    rare: None,
};

static NO_RARE: RareDetails = RareDetails {
    tool: None,
    arguments: None,
    idempotency_key: None,
    protocol_version: None,
    peer_info: None,
    tool_error: false,
    cancels: None,
    truncated: false,
};

impl std::ops::Deref for Details {
    type Target = McpDetails;
    fn deref(&self) -> &McpDetails {
        self.0.as_deref().unwrap_or(&NO_DETAILS)
    }
}

impl Details {
    /// The details, allocated on first write.
    pub(crate) fn make_mut(&mut self) -> &mut McpDetails {
        self.0.get_or_insert_with(Default::default)
    }
}

/// MCP-specific fields, extracted where the method says they exist. Progress notifications
/// are most of the events of a busy session, so their fields are kept inline and the rest
/// (tool calls, initialize) behind a second allocation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpDetails {
    /// `params._meta.progressToken` of a request, or `params.progressToken` of
    /// `notifications/progress`, as JSON text.
    pub progress_token: Option<String>,
    /// `notifications/progress` values (numbers in the spec).
    pub progress: Option<serde_json::Number>,
    pub total: Option<serde_json::Number>,
    pub(crate) rare: Option<Box<RareDetails>>,
}

impl std::ops::Deref for McpDetails {
    type Target = RareDetails;
    fn deref(&self) -> &RareDetails {
        self.rare.as_deref().unwrap_or(&NO_RARE)
    }
}

impl std::ops::DerefMut for McpDetails {
    fn deref_mut(&mut self) -> &mut RareDetails {
        self.rare.get_or_insert_with(Default::default)
    }
}

/// The fields only some requests and responses carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RareDetails {
    /// `tools/call` tool name.
    pub tool: Option<String>,
    /// `tools/call` arguments, canonical JSON (sorted keys), possibly cut.
    pub arguments: Option<String>,
    /// An idempotency key on `tools/call` (`params._meta.idempotencyKey` or
    /// `params.idempotencyKey`, as proposed in SEP-3182).
    pub idempotency_key: Option<String>,
    /// `initialize`: the protocol version asked for or granted.
    pub protocol_version: Option<String>,
    /// `initialize`: clientInfo / serverInfo as `name version`.
    pub peer_info: Option<String>,
    /// `result.isError` of a `tools/call` result.
    pub tool_error: bool,
    /// `notifications/cancelled`: the request it cancels.
    pub cancels: Option<RequestId>,
    /// Payload text was cut at [`MAX_PAYLOAD_TEXT`].
    pub truncated: bool,
}

impl Message {
    /// What the first bytes of a body cut short (by a snap length, a loss) show of its message:
    /// a request with its `id` and `method`, or a notification with its method; marked
    /// truncated, since nothing else of it is known.
    pub(crate) fn cut(bytes: &[u8]) -> Option<Message> {
        let (id, method) = crate::prefix::request_in_prefix(bytes);
        let method = method?;
        let mut m = Message {
            kind: if id.is_some() {
                Kind::Request
            } else {
                Kind::Notification
            },
            id,
            null_id: false,
            method: Some(method.into()),
            fault: None,
            mcp: Details::default(),
        };
        m.mcp.make_mut().truncated = true;
        Some(m)
    }

    fn malformed_because(reason: impl Into<String>) -> Message {
        Message {
            kind: Kind::Malformed,
            id: None,
            null_id: false,
            method: None,
            fault: Fault::boxed(None, None, Some(reason.into())),
            mcp: Details::default(),
        }
    }

    /// The error object's `code`, of an error response.
    pub fn error_code(&self) -> Option<i64> {
        self.fault.as_ref().and_then(|f| f.code)
    }

    /// The error object's `message`, of an error response.
    pub fn error_message(&self) -> Option<&str> {
        self.fault.as_ref().and_then(|f| f.message.as_deref())
    }

    /// Why the payload is not valid JSON-RPC (for [`Kind::Malformed`]).
    pub fn malformed(&self) -> Option<&str> {
        self.fault.as_ref().and_then(|f| f.malformed.as_deref())
    }

    /// The message proves the traffic is MCP: it calls an MCP method, or answers `initialize`
    /// (a result naming the protocol version). Other JSON-RPC (`eth_blockNumber`, a bare result)
    /// proves nothing.
    pub fn is_mcp_evidence(&self) -> bool {
        match self.kind {
            Kind::Request | Kind::Notification => self.method.as_deref().is_some_and(is_mcp_method),
            Kind::Response => self.mcp.protocol_version.is_some(),
            Kind::Error | Kind::Malformed => false,
        }
    }

    /// A one-line summary: `request tools/call #7`, `response #7`, `error #7 -32600`.
    pub fn summary(&self) -> String {
        let id = self
            .id
            .as_ref()
            .map(|i| format!(" #{}", i.label()))
            .unwrap_or_default();
        match self.kind {
            Kind::Request => format!("{}{id}", self.method.as_deref().unwrap_or("?")),
            Kind::Notification => self.method.as_deref().unwrap_or_default().to_string(),
            Kind::Response => format!("response{id}"),
            Kind::Error => format!(
                "error{id} {}",
                self.error_code().map(|c| c.to_string()).unwrap_or_default()
            ),
            Kind::Malformed => format!("malformed ({})", self.malformed().unwrap_or("unknown")),
        }
    }
}

/// The JSON-RPC messages one HTTP exchange carries: its request body, a JSON response body,
/// and each SSE event of an event-stream response.
#[derive(Debug, Default)]
pub struct ExchangeMessages {
    pub request: Vec<Message>,
    pub response: Vec<Message>,
    /// By event index.
    pub events: Vec<Vec<Message>>,
}

impl ExchangeMessages {
    pub fn of(e: &mcpf_http::exchange::Exchange) -> ExchangeMessages {
        ExchangeMessages {
            request: e
                .request
                .as_ref()
                .map(|r| parse_payload(&r.body.data))
                .unwrap_or_default(),
            response: match &e.end {
                Some(end) if e.response_is_json() => parse_payload(&end.body.data),
                _ => Vec::new(),
            },
            events: e
                .events
                .iter()
                .map(|ev| parse_payload(ev.data.as_bytes()))
                .collect(),
        }
    }
}

/// Whether `bytes` cannot hold a JSON-RPC message: every message has a member named `jsonrpc`,
/// and JSON writes that name either as it is or with `\u` escapes. Looked for with memchr's
/// search, at a fraction of what reading the JSON costs: most JSON a capture carries (REST APIs)
/// is then not read at all.
pub(crate) fn cannot_be_jsonrpc(bytes: &[u8]) -> bool {
    JSONRPC_NAME.find(bytes).is_none() && ESCAPE.find(bytes).is_none()
}

/// Substring searchers built once: building one costs about as much as searching a body of a
/// few hundred bytes, and every body and result is searched.
pub(crate) type Needles = LazyLock<Vec<memmem::Finder<'static>>>;

pub(crate) fn needles(names: &[&str]) -> Vec<memmem::Finder<'static>> {
    names
        .iter()
        .map(|n| memmem::Finder::new(n.as_bytes()).into_owned())
        .collect()
}

static JSONRPC_NAME: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\"jsonrpc\""));
/// Any `\u` escape, which may spell a name we look for.
pub(crate) static ESCAPE: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\\u"));

/// What a whole request body says of MCP, for the early classification of its connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodySays {
    /// A message calls an MCP method, or answers with a protocol version.
    Mcp,
    /// JSON-RPC requests and notifications, every one calling a method MCP does not have.
    JsonRpcNotMcp,
    /// JSON-RPC that may be MCP (a response, a malformed message): its exchange will tell.
    Maybe,
    /// It holds no JSON-RPC message at all ([`cannot_be_jsonrpc`]).
    NotJsonRpc,
}

/// What `body`, a request's whole body, says of MCP.
pub fn body_says(body: &[u8]) -> BodySays {
    if cannot_be_jsonrpc(body) {
        return BodySays::NotJsonRpc;
    }
    let messages = parse_payload(body);
    if messages.iter().any(Message::is_mcp_evidence) {
        return BodySays::Mcp;
    }
    let calls = |m: &Message| matches!(m.kind, Kind::Request | Kind::Notification);
    if !messages.is_empty() && messages.iter().all(calls) {
        return BodySays::JsonRpcNotMcp;
    }
    BodySays::Maybe
}

/// Why a body was not read: it cannot be JSON-RPC ([`cannot_be_jsonrpc`]); read only if its
/// exchange turns out to be MCP, for what it then is.
pub(crate) const NOT_READ: &str = "not read: holds no jsonrpc member";

impl Message {
    /// The stand-in for the messages of a body that cannot be JSON-RPC: malformed, as reading
    /// it would find every message of it.
    pub(crate) fn not_read() -> Message {
        Message::malformed_because(NOT_READ)
    }

    /// Whether this is that stand-in.
    pub(crate) fn is_not_read(&self) -> bool {
        self.malformed() == Some(NOT_READ)
    }
}

/// Parses a body or event payload: one message, or a batch array (2025-03-26). Empty input gives
/// no messages.
pub(crate) fn parse_payload(bytes: &[u8]) -> Vec<Message> {
    match std::str::from_utf8(trim_ascii(bytes)) {
        Ok(text) => parse_payload_str(text),
        Err(_) => vec![Message::malformed_because("not UTF-8")],
    }
}

/// [`parse_payload`] of text already known to be UTF-8 (an SSE event's data).
pub(crate) fn parse_payload_str(text: &str) -> Vec<Message> {
    let text = text.trim_ascii();
    if text.is_empty() {
        return Vec::new();
    }
    if !text.starts_with('[') {
        return vec![envelope::parse_one(text)];
    }
    // The batch is checked whole before any message is read, as serde_json does: one syntax
    // error anywhere makes the whole payload malformed, with serde_json's words for it.
    match scan::Cursor::new(text).batch() {
        Some(items) if !items.is_empty() => items.into_iter().map(envelope::parse_one).collect(),
        _ => serde_reader::parse_payload_str(text),
    }
}

/// The `result` (or `error`) text of each response in a payload, by ID, as sent: what "the
/// same answer" compares, byte for byte. In a batch the first response to an ID counts.
pub(crate) fn answer_texts(bytes: &[u8]) -> mcpf_model::WireMap<RequestId, String> {
    let mut out = mcpf_model::WireMap::default();
    let Ok(text) = std::str::from_utf8(trim_ascii(bytes)) else {
        return out;
    };
    if !text.starts_with('[') {
        envelope::answer_text(text, &mut out);
        return out;
    }
    match scan::Cursor::new(text).batch() {
        Some(items) => items
            .into_iter()
            .for_each(|item| envelope::answer_text(item, &mut out)),
        None => serde_reader::answer_texts(text, &mut out),
    }
    out
}

/// Method names of the MCP specification, shared by every message that uses them.
pub(crate) const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "notifications/initialized",
    "notifications/progress",
    "notifications/message",
    "notifications/cancelled",
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/roots/list_changed",
    "tools/call",
    "tools/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "ping",
    "logging/setLevel",
    "completion/complete",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
];

/// A method of the MCP specification (any revision): the lifecycle, the server and client
/// features, their notifications, and the 2026-07-28 discovery and subscription methods.
pub fn is_mcp_method(method: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "notifications/",
        "tools/",
        "resources/",
        "prompts/",
        "completion/",
        "logging/",
        "sampling/",
        "roots/",
        "elicitation/",
        "tasks/",
        "server/",
        "subscriptions/",
    ];
    matches!(method, "initialize" | "ping") || PREFIXES.iter().any(|p| method.starts_with(p))
}

/// What an envelope's `jsonrpc`, `id` and `method` make of a message, for both readers alike: a
/// request or a notification when it names a method, else a message its `result` or `error`
/// will classify (malformed until then); `Err` with the malformed message when they show it is
/// not JSON-RPC.
fn envelope_head(
    jsonrpc: Option<&str>,
    id: Option<Result<Option<RequestId>, &'static str>>,
    method: Option<&str>,
) -> Result<Message, Message> {
    match jsonrpc {
        Some("\"2.0\"") => {}
        Some(_) => return Err(Message::malformed_because("jsonrpc is not \"2.0\"")),
        None => return Err(Message::malformed_because("no jsonrpc member")),
    }
    let (id, null_id) = match id {
        None => (None, false),
        Some(Ok(Some(id))) => (Some(id), false),
        Some(Ok(None)) => (None, true),
        Some(Err(reason)) => return Err(Message::malformed_because(reason)),
    };
    let kind = match (method, &id) {
        (None, _) => Kind::Malformed,
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) if null_id => {
            return Err(Message::malformed_because("request with a null id"));
        }
        (Some(_), None) => Kind::Notification,
    };
    Ok(Message {
        kind,
        id,
        null_id,
        method: method.map(intern_method),
        fault: None,
        mcp: Details::default(),
    })
}

fn intern_method(m: &str) -> Cow<'static, str> {
    match KNOWN_METHODS.iter().find(|k| **k == m) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(m.to_string()),
    }
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_says_mcp_by_its_methods_and_not_mcp_only_by_calls() {
        let says = |b: &str| body_says(b.as_bytes());
        assert_eq!(
            says(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#),
            BodySays::Mcp
        );
        let batch =
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_call"},{"jsonrpc":"2.0","method":"ping"}]"#;
        assert_eq!(says(batch), BodySays::Mcp);
        let eth = r#"{"params":[],"method":"eth_blockNumber","id":7,"jsonrpc":"2.0"}"#;
        assert_eq!(says(eth), BodySays::JsonRpcNotMcp);
        // A client answering a server's request names no method: its exchange will tell.
        assert_eq!(
            says(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            BodySays::Maybe
        );
        assert_eq!(says(r#"{"jsonrpc":"2.0","method":"#), BodySays::Maybe);
        assert_eq!(
            says(r#"{"user":"ana","items":[1,2]}"#),
            BodySays::NotJsonRpc
        );
        assert_eq!(says(""), BodySays::NotJsonRpc);
    }

    #[test]
    fn only_bytes_without_a_jsonrpc_name_are_left_unread() {
        assert!(cannot_be_jsonrpc(br#"{"items":[1,2],"next":null}"#));
        assert!(cannot_be_jsonrpc(b"not json at all"));
        assert!(!cannot_be_jsonrpc(
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
        ));
        // The name written with escapes is still the name: such bytes are read.
        let escaped = br#"{"\u006asonrpc":"2.0","id":1,"method":"initialize"}"#;
        assert!(!cannot_be_jsonrpc(escaped));
        assert_eq!(parse_payload(escaped)[0].kind, Kind::Request);
        // Whatever is left unread, reading finds no message in it.
        for body in [
            &br#"{"a":1}"#[..],
            br#"[{"id":1,"method":"x"}]"#,
            br#"{"json rpc":"2.0"}"#,
        ] {
            assert!(cannot_be_jsonrpc(body));
            assert!(
                parse_payload(body)
                    .iter()
                    .all(|m| m.kind == Kind::Malformed)
            );
        }
    }

    use std::hash::BuildHasher;

    fn num(t: &str) -> RequestId {
        RequestId::Number(t.into())
    }

    #[test]
    fn request_ids_are_the_same_number_exactly_never_through_a_double() {
        for (a, b) in [
            ("-0", "0"),
            ("0.0", "0"),
            ("0e7", "0"),
            ("1e2", "100"),
            ("100.00", "100"),
            ("1E+2", "100"),
            ("12.5e-1", "1.25"),
            ("-3", "-3.0"),
        ] {
            assert_eq!(num(a), num(b), "{a} {b}");
            let state = std::hash::RandomState::new();
            assert_eq!(state.hash_one(num(a)), state.hash_one(num(b)), "{a} {b}");
        }
        for (a, b) in [
            ("18446744073709551616", "18446744073709551617"),
            ("1e400", "1e401"),
            ("1", "-1"),
            ("0.1", "1"),
            ("9007199254740993", "9007199254740992"),
        ] {
            assert_ne!(num(a), num(b), "{a} {b}");
        }
        assert_ne!(num("7"), RequestId::String("7".into()));
        // An exponent too long to read is compared as spelled, never panics.
        assert_ne!(num("1e9999999999999999999"), num("1e9999999999999999998"));
        assert_eq!(num("1e9999999999999999999"), num("1e9999999999999999999"));
    }

    #[test]
    fn request_ids_print_as_sent_in_every_report() {
        for t in [
            "18446744073709551616",
            "18446744073709551617",
            "1e400",
            "-0",
            "1E5",
        ] {
            let v = num(t).to_value();
            assert_eq!(v, serde_json::json!({ "number": t }), "{t}");
            let back: RequestId = serde_json::from_value(v).unwrap();
            assert_eq!(back.json(), t);
        }
        for t in ["7", "-3", "1.5", "18446744073709551615"] {
            assert_eq!(num(t).to_value().to_string(), t);
        }
        assert_eq!(num("1e400").label(), "1e400");
    }

    #[test]
    fn deep_nesting_keeps_the_message_and_marks_what_it_could_not_read() {
        for depth in [200, 1_000_000] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"t","arguments":{{"a":{deep}}}}}}}"#
            );
            let m = &parse_payload(call.as_bytes())[0];
            assert_eq!(
                (m.kind, m.method.as_deref()),
                (Kind::Request, Some("tools/call"))
            );
            assert_eq!(m.mcp.tool.as_deref(), Some("t"));
            assert!(m.mcp.truncated, "{depth}");
            assert!(
                m.mcp
                    .arguments
                    .as_deref()
                    .unwrap()
                    .starts_with(r#"{"a":[[["#)
            );
            let answer = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"v":{deep}}}}}"#);
            let m = &parse_payload(answer.as_bytes())[0];
            assert_eq!(m.kind, Kind::Response, "{depth}");
        }
    }

    fn one(s: &str) -> Message {
        let mut v = parse_payload(s.as_bytes());
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    #[test]
    fn ids_keep_their_json_type() {
        let a = one(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let b = one(r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#);
        assert_eq!(a.id, Some(RequestId::Number("1".into())));
        assert_eq!(b.id, Some(RequestId::String("1".into())));
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.unwrap().json(), "1");
        assert_eq!(b.id.unwrap().json(), "\"1\"");
    }

    #[test]
    fn classifies_every_kind() {
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#).kind,
            Kind::Request
        );
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).kind,
            Kind::Notification
        );
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).kind,
            Kind::Response
        );
        let e = one(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad"}}"#);
        assert_eq!(e.kind, Kind::Error);
        assert!(e.null_id);
        assert_eq!(e.error_code(), Some(-32600));
        assert_eq!(e.error_message(), Some("Bad"));
    }

    #[test]
    fn malformed_payloads_say_why() {
        for (text, why) in [
            ("{not json", "invalid JSON"),
            (r#"{"id":1,"method":"x"}"#, "no jsonrpc"),
            (r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, "not \"2.0\""),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
                "neither a string",
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, "neither method"),
            ("42", "not a JSON object"),
        ] {
            let m = one(text);
            assert_eq!(m.kind, Kind::Malformed, "{text}");
            assert!(m.malformed().unwrap().contains(why), "{text}: {m:?}");
        }
        assert_eq!(
            parse_payload(&[0xff, 0xfe])[0].malformed(),
            Some("not UTF-8")
        );
        assert!(parse_payload(b"  \r\n").is_empty());
    }

    #[test]
    fn batches_are_split() {
        let v = parse_payload(
            br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]"#,
        );
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].kind, Kind::Notification);
    }

    #[test]
    fn fields_spelled_with_escapes_are_still_read() {
        // The quick substring check must not hide a member whose name uses a \u escape.
        let m = one(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"\u0069sError":true}}"#);
        assert!(m.mcp.tool_error);
        let m =
            one(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"long"}]}}"#);
        assert!(!m.mcp.tool_error);
        let m = one(
            r#"{"jsonrpc":"2.0","method":"x/y","params":{"_meta":{"progr\u0065ssToken":"t"}}}"#,
        );
        assert_eq!(m.mcp.progress_token.as_deref(), Some("\"t\""));
    }

    #[test]
    fn extracts_mcp_details() {
        let call = one(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"reindex","arguments":{"b":2,"a":1},"_meta":{"progressToken":"reindex-7"}}}"#,
        );
        assert_eq!(call.mcp.tool.as_deref(), Some("reindex"));
        assert_eq!(call.mcp.arguments.as_deref(), Some(r#"{"a":1,"b":2}"#));
        assert_eq!(call.mcp.progress_token.as_deref(), Some("\"reindex-7\""));
        let progress = one(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"reindex-7","progress":18,"total":63}}"#,
        );
        assert_eq!(
            progress.mcp.progress_token.as_deref(),
            Some("\"reindex-7\"")
        );
        assert_eq!(progress.mcp.progress, Some(18.into()));
        let init = one(
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"seed","version":"1.0"}}}"#,
        );
        assert_eq!(init.mcp.protocol_version.as_deref(), Some("2025-06-18"));
        assert_eq!(init.mcp.peer_info.as_deref(), Some("seed 1.0"));
        let result = one(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}}"#);
        assert!(result.mcp.tool_error);
        let cancel = one(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"abc"}}"#,
        );
        assert_eq!(cancel.mcp.cancels, Some(RequestId::String("abc".into())));
    }
}
