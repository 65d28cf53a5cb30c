//! The serde_json reader of JSON-RPC envelopes, as it was before the [`super::envelope`] reader:
//! that reader hands it every payload it is not sure of, so its verdicts and its error texts
//! ("invalid JSON: …") stay the ones reports have always shown, and the differential tests
//! compare the two on everything else.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{
    Details, ESCAPE, Fault, Kind, MAX_PAYLOAD_TEXT, McpDetails, Message, Needles, RequestId,
    envelope_head, needles,
};

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

/// The ID a raw `id` (or `requestId`) holds: `None` for `null`.
pub(super) fn request_id(raw: &RawValue) -> Result<Option<RequestId>, &'static str> {
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

/// [`super::parse_payload_str`] of trimmed, non-empty text.
pub(super) fn parse_payload_str(text: &str) -> Vec<Message> {
    if text.starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(text) {
            Ok(items) if items.is_empty() => vec![Message::malformed_because("empty batch")],
            Ok(items) => items.iter().map(|raw| parse_one(raw.get())).collect(),
            Err(e) => vec![Message::malformed_because(format!("invalid JSON: {e}"))],
        };
    }
    vec![parse_one(text)]
}

/// [`super::answer_texts`] of trimmed UTF-8 text.
pub(super) fn answer_texts(text: &str, out: &mut mcpf_model::WireMap<RequestId, String>) {
    if text.starts_with('[') {
        if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(text) {
            items.iter().for_each(|raw| answer_text(raw.get(), out));
        }
        return;
    }
    answer_text(text, out);
}

/// The answer text of one message, if it is a response with an ID.
pub(super) fn answer_text(raw: &str, out: &mut mcpf_model::WireMap<RequestId, String>) {
    let Ok(env) = serde_json::from_str::<Envelope<'_>>(raw) else {
        return;
    };
    let Some(Ok(Some(id))) = env.id.map(request_id) else {
        return;
    };
    if let Some(r) = env.result.or(env.error) {
        out.entry(id).or_insert_with(|| r.get().to_string());
    }
}

pub(super) fn parse_one(text: &str) -> Message {
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(e) if e.is_data() => return Message::malformed_because("not a JSON object"),
        Err(e) => return Message::malformed_because(format!("invalid JSON: {e}")),
    };
    let id = env.id.map(request_id);
    let head = envelope_head(env.jsonrpc.map(|v| v.get()), id, env.method.as_deref());
    let mut msg = match head {
        Ok(msg) => msg,
        Err(malformed) => return malformed,
    };
    if let Some(method) = env.method.as_deref() {
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
            msg.fault = error_fault(error.get());
        }
        (Some(_), Some(_)) => return Message::malformed_because("both result and error"),
        (None, None) => return Message::malformed_because("neither method, result nor error"),
    }
    msg
}

/// The code and message of an error object.
pub(super) fn error_fault(error: &str) -> Option<Box<Fault>> {
    let obj = serde_json::from_str::<ErrorObject<'_>>(error).ok()?;
    Fault::boxed(
        obj.code.and_then(|c| c.as_i64()),
        obj.message.map(|m| m.into_owned()),
        None,
    )
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
pub(super) fn raw_text(t: &str) -> String {
    if t.starts_with('"') {
        serde_json::from_str::<String>(t).unwrap_or_else(|_| t.to_string())
    } else {
        t.to_string()
    }
}

pub(super) fn peer_info(text: &str) -> Option<String> {
    let p: PeerInfo<'_> = serde_json::from_str(text).ok()?;
    let name = p.name.map(|n| n.into_owned()).unwrap_or_default();
    Some(match p.version {
        Some(ver) => format!("{name} {ver}"),
        None => name,
    })
}

/// Whether `text` may hold a member named one of `names`: a plain substring search, or any
/// `\u` escape (a name could be spelled with one). Lets a large payload that has none of the
/// fields we read skip a second parse.
pub(super) fn may_name(text: &str, names: &Needles) -> bool {
    let t = text.as_bytes();
    ESCAPE.find(t).is_some() || names.iter().any(|n| n.find(t).is_some())
}

pub(super) fn extract_params(method: &str, params: &str, details: &mut Details) {
    let known = matches!(
        method,
        "tools/call" | "notifications/progress" | "notifications/cancelled" | "initialize"
    );
    // Other methods are read only for a progress token (logging messages can be large).
    if !known && !may_name(params, &PROGRESS_TOKEN) {
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
            let meta_key = p.meta.as_ref().and_then(|m| m.idempotency_key);
            tool_call(
                mcp,
                p.name.map(RawValue::get),
                p.arguments.map(RawValue::get),
                meta_key.or(p.idempotency_key).map(RawValue::get),
            );
        }
        "notifications/progress" => {
            mcp.progress_token = p.progress_token.map(|t| t.get().to_string());
            mcp.progress = p.progress.and_then(|v| serde_json::from_str(v.get()).ok());
            mcp.total = p.total.and_then(|v| serde_json::from_str(v.get()).ok());
        }
        "notifications/cancelled" => {
            mcp.cancels = p.request_id.and_then(|raw| request_id(raw).ok().flatten());
        }
        "initialize" => {
            mcp.protocol_version = p.protocol_version.map(|v| raw_text(v.get()));
            mcp.peer_info = p.client_info.and_then(|v| peer_info(v.get()));
        }
        _ => {}
    }
}

/// The fields of a `tools/call` request, from the JSON text of its `name`, `arguments` and
/// idempotency key; both readers write them here.
pub(super) fn tool_call(
    mcp: &mut McpDetails,
    name: Option<&str>,
    arguments: Option<&str>,
    idempotency_key: Option<&str>,
) {
    mcp.tool = name.map(raw_text);
    if let Some(args) = arguments {
        // Keys sorted at every level: the same call re-sent compares equal whatever its key
        // order. Arguments nested deeper than serde_json builds (128 levels) are kept as sent,
        // cut, and marked.
        mcp.arguments = Some(match serde_json::from_str::<serde_json::Value>(args) {
            Ok(mut v) => {
                // Sorted where they lie: no copy of the arguments is built.
                v.sort_all_objects();
                cut(&v.to_string(), mcp)
            }
            Err(_) => {
                mcp.truncated = true;
                cut(args, mcp)
            }
        });
    }
    mcp.idempotency_key = idempotency_key.map(raw_text);
}

/// The members of `result` the analysis reads.
static RESULT_NAMES: Needles =
    LazyLock::new(|| needles(&["isError", "protocolVersion", "serverInfo"]));
static PROGRESS_TOKEN: Needles = LazyLock::new(|| needles(&["progressToken"]));

pub(super) fn extract_result(result: &str, details: &mut Details) {
    // A large result that names none of the fields is not parsed a second time.
    if !may_name(result, &RESULT_NAMES) {
        return;
    }
    let Ok(r) = serde_json::from_str::<ResultFields<'_>>(result) else {
        return;
    };
    // Only what is there is written (the details are allocated on the first write): the
    // rarely used fields live in a second allocation.
    if let Some(v) = r.protocol_version {
        details.make_mut().protocol_version = Some(raw_text(v.get()));
    }
    if let Some(info) = r.server_info.and_then(|v| peer_info(v.get())) {
        details.make_mut().peer_info = Some(info);
    }
    if r.is_error == Some(true) {
        details.make_mut().tool_error = true;
    }
}
