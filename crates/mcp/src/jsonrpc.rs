//! JSON-RPC 2.0 envelopes, read without materialising more than the fields an analyst needs.
//!
//! Request IDs keep their JSON type (`1` and `"1"` are different IDs, as the spec and every SDK
//! bug about `str(id)` collisions require). Anything that is not valid JSON-RPC is kept as
//! [`Kind::Malformed`] with the reason, never an error.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::Serialize;
use serde_json::value::RawValue;

/// Longest payload text (tool arguments, results, error data) kept per message; beyond it the
/// text is cut and marked. JSON reports print what was kept.
pub(crate) const MAX_PAYLOAD_TEXT: usize = 256 * 1024;

/// A JSON-RPC request ID exactly as it appeared on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// A number, kept as its JSON text (`1` and `1.0` stay distinct).
    Number(String),
    String(String),
}

impl RequestId {
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

    pub fn to_value(&self) -> serde_json::Value {
        match self {
            RequestId::Number(n) => serde_json::from_str(n).unwrap_or(serde_json::Value::Null),
            RequestId::String(s) => serde_json::Value::String(s.clone()),
        }
    }

    fn from_raw(raw: &RawValue) -> Result<Option<RequestId>, &'static str> {
        let text = raw.get().trim();
        match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text)
                .map(|s| Some(RequestId::String(s)))
                .map_err(|_| "invalid string id"),
            Some(b'-' | b'0'..=b'9') => Ok(Some(RequestId::Number(text.to_string()))),
            Some(b'n') if text == "null" => Ok(None),
            _ => Err("id is neither a string nor a number"),
        }
    }
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

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    /// Present-but-null must stay distinguishable from absent, so the raw value is taken as is.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct ErrorObject<'a> {
    #[serde(default)]
    code: Option<serde_json::Number>,
    #[serde(borrow, default)]
    message: Option<Cow<'a, str>>,
}

impl Message {
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
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if text.is_empty() {
        return Vec::new();
    }
    if text.starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) if items.is_empty() => vec![Message::malformed_because("empty batch")],
            Ok(items) => items.iter().map(|raw| parse_one(raw.get())).collect(),
            Err(e) => vec![Message::malformed_because(format!("invalid JSON: {e}"))],
        };
    }
    vec![parse_one(text)]
}

/// The `result` (or `error`) text of each response in a payload, by ID, as sent: what "the
/// same answer" compares, byte for byte. In a batch the first response to an ID counts.
pub(crate) fn answer_texts(bytes: &[u8]) -> mcpf_model::WireMap<RequestId, String> {
    let mut out = mcpf_model::WireMap::default();
    let Ok(text) = std::str::from_utf8(trim_ascii(bytes)) else {
        return out;
    };
    let mut one = |raw: &str| {
        let Ok(env) = serde_json::from_str::<Envelope<'_>>(raw) else {
            return;
        };
        let Some(Ok(Some(id))) = env.id.map(RequestId::from_raw) else {
            return;
        };
        if let Some(r) = env.result.or(env.error) {
            out.entry(id).or_insert_with(|| r.get().to_string());
        }
    };
    if text.starts_with('[') {
        if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
            items.iter().for_each(|raw| one(raw.get()));
        }
        return out;
    }
    one(text);
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

fn parse_one(text: &str) -> Message {
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) if e.is_data() => return Message::malformed_because("not a JSON object"),
        Err(e) => return Message::malformed_because(format!("invalid JSON: {e}")),
    };
    match env.jsonrpc.map(|v| v.get()) {
        Some("\"2.0\"") => {}
        Some(_) => return Message::malformed_because("jsonrpc is not \"2.0\""),
        None => return Message::malformed_because("no jsonrpc member"),
    }
    let (id, null_id) = match env.id {
        None => (None, false),
        Some(raw) => match RequestId::from_raw(raw) {
            Ok(Some(id)) => (Some(id), false),
            Ok(None) => (None, true),
            Err(reason) => return Message::malformed_because(reason),
        },
    };
    let mut msg = Message {
        kind: Kind::Malformed,
        id,
        null_id,
        method: env.method.as_deref().map(intern_method),
        fault: None,
        mcp: Details::default(),
    };
    if let Some(method) = env.method.as_deref() {
        msg.kind = if msg.id.is_some() {
            Kind::Request
        } else if null_id {
            return Message::malformed_because("request with a null id");
        } else {
            Kind::Notification
        };
        if let Some(params) = env.params {
            extract_params(method, params.get(), &mut msg.mcp);
        }
        return msg;
    }
    match (env.result, env.error) {
        (Some(result), None) => {
            msg.kind = Kind::Response;
            if msg.id.is_none() {
                return Message::malformed_because("response without an id");
            }
            extract_result(result.get(), &mut msg.mcp);
        }
        (None, Some(error)) => {
            msg.kind = Kind::Error;
            if let Ok(obj) = serde_json::from_str::<ErrorObject<'_>>(error.get()) {
                msg.fault = Fault::boxed(
                    obj.code.and_then(|c| c.as_i64()),
                    obj.message.map(|m| m.into_owned()),
                    None,
                );
            }
        }
        (Some(_), Some(_)) => return Message::malformed_because("both result and error"),
        (None, None) => return Message::malformed_because("neither method, result nor error"),
    }
    msg
}

fn cut(text: &str, mcp: &mut McpDetails) -> String {
    if text.len() <= MAX_PAYLOAD_TEXT {
        return text.to_string();
    }
    mcp.truncated = true;
    let mut end = MAX_PAYLOAD_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The fields of `params` (and of its `_meta`) the analysis reads, borrowed from the payload:
/// everything else is skipped without being built.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Params<'a> {
    #[serde(borrow, rename = "_meta")]
    meta: Option<Meta<'a>>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, rename = "idempotencyKey")]
    idempotency_key: Option<&'a RawValue>,
    #[serde(borrow, rename = "progressToken")]
    progress_token: Option<&'a RawValue>,
    #[serde(borrow)]
    progress: Option<&'a RawValue>,
    #[serde(borrow)]
    total: Option<&'a RawValue>,
    #[serde(borrow, rename = "requestId")]
    request_id: Option<&'a RawValue>,
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, rename = "clientInfo")]
    client_info: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Meta<'a> {
    #[serde(borrow, rename = "progressToken")]
    progress_token: Option<&'a RawValue>,
    #[serde(borrow, rename = "idempotencyKey")]
    idempotency_key: Option<&'a RawValue>,
}

/// The fields of `result` the analysis reads.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ResultFields<'a> {
    #[serde(borrow, rename = "protocolVersion")]
    protocol_version: Option<&'a RawValue>,
    #[serde(borrow, rename = "serverInfo")]
    server_info: Option<&'a RawValue>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct PeerInfo<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    version: Option<Cow<'a, str>>,
}

/// A raw JSON value as text: strings unquoted, anything else as written.
fn raw_text(v: &RawValue) -> String {
    let t = v.get();
    if t.starts_with('"') {
        serde_json::from_str::<String>(t).unwrap_or_else(|_| t.to_string())
    } else {
        t.to_string()
    }
}

fn peer_info_raw(v: &RawValue) -> Option<String> {
    let p: PeerInfo<'_> = serde_json::from_str(v.get()).ok()?;
    let name = p.name.map(|n| n.into_owned()).unwrap_or_default();
    Some(match p.version {
        Some(ver) => format!("{name} {ver}"),
        None => name,
    })
}

/// Whether `text` may hold a member named one of `names`: a plain substring search, or any
/// `\u` escape (a name could be spelled with one). Lets a large payload that has none of the
/// fields we read skip a second parse.
fn may_name(text: &str, names: &[&str]) -> bool {
    let t = text.as_bytes();
    memchr::memmem::find(t, b"\\u").is_some()
        || names
            .iter()
            .any(|n| memchr::memmem::find(t, n.as_bytes()).is_some())
}

fn extract_params(method: &str, params: &str, details: &mut Details) {
    let known = matches!(
        method,
        "tools/call" | "notifications/progress" | "notifications/cancelled" | "initialize"
    );
    // Other methods are read only for a progress token (logging messages can be large).
    if !known && !may_name(params, &["progressToken"]) {
        return;
    }
    let Ok(p) = serde_json::from_str::<Params<'_>>(params) else {
        return;
    };
    let wanted = p.meta.as_ref().is_some_and(|m| m.progress_token.is_some())
        || matches!(
            method,
            "tools/call" | "notifications/progress" | "notifications/cancelled" | "initialize"
        );
    if !wanted {
        return;
    }
    let mcp = details.make_mut();
    if let Some(token) = p.meta.as_ref().and_then(|m| m.progress_token) {
        mcp.progress_token = Some(token.get().to_string());
    }
    match method {
        "tools/call" => {
            mcp.tool = p.name.map(raw_text);
            if let Some(args) = p.arguments {
                // Keys sorted at every level: the same call re-sent compares equal whatever its
                // key order. Arguments nested deeper than serde_json builds (128 levels) are kept
                // as sent, cut, and marked.
                mcp.arguments = Some(
                    match serde_json::from_str::<serde_json::Value>(args.get()) {
                        Ok(v) => cut(&canonical(&v).to_string(), mcp),
                        Err(_) => {
                            mcp.truncated = true;
                            cut(args.get(), mcp)
                        }
                    },
                );
            }
            mcp.idempotency_key = p
                .meta
                .as_ref()
                .and_then(|m| m.idempotency_key)
                .or(p.idempotency_key)
                .map(raw_text);
        }
        "notifications/progress" => {
            mcp.progress_token = p.progress_token.map(|t| t.get().to_string());
            mcp.progress = p.progress.and_then(|v| serde_json::from_str(v.get()).ok());
            mcp.total = p.total.and_then(|v| serde_json::from_str(v.get()).ok());
        }
        "notifications/cancelled" => {
            mcp.cancels = p
                .request_id
                .and_then(|raw| RequestId::from_raw(raw).ok().flatten());
        }
        "initialize" => {
            mcp.protocol_version = p.protocol_version.map(raw_text);
            mcp.peer_info = p.client_info.and_then(peer_info_raw);
        }
        _ => {}
    }
}

/// A copy of `v` with object keys sorted at every level.
fn canonical(v: &serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            serde_json::Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&o[k])))
                    .collect(),
            )
        }
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

fn extract_result(result: &str, details: &mut Details) {
    if !may_name(result, &["isError", "protocolVersion", "serverInfo"]) {
        return;
    }
    let mcp = details.make_mut();
    let Ok(r) = serde_json::from_str::<ResultFields<'_>>(result) else {
        return;
    };
    // Only what is there is written: the rarely used fields live in a second allocation.
    if let Some(v) = r.protocol_version {
        mcp.protocol_version = Some(raw_text(v));
    }
    if let Some(info) = r.server_info.and_then(peer_info_raw) {
        mcp.peer_info = Some(info);
    }
    if r.is_error == Some(true) {
        mcp.tool_error = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
