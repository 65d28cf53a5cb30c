//! One JSON-RPC message read in a single pass: the envelope's members, and the members of
//! `params`, `result` and `error` the analysis uses, as spans of the payload.
//!
//! Everything else is skipped (its syntax checked, nothing built). A message this reader is not
//! sure about (a repeated or escaped member name, an escaped method, nesting past the cursor's
//! bound, anything serde_json would refuse) goes to [`serde_reader`] whole, so the `Message` is
//! the one it has always been, down to the error text.

use serde_json::Number;

use super::scan::Cursor;
use super::serde_reader;
use super::{Details, Fault, Kind, Message, RequestId, envelope_head};

/// The envelope members, as JSON text. Like serde_json's `Option`, a member that is `null`
/// counts as absent, except `id`, whose `null` is kept.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a str>,
    id: Option<&'a str>,
    /// The method name, which had no escapes.
    method: Option<&'a str>,
    params: Option<Member<'a, Params<'a>>>,
    result: Option<Member<'a, ResultFields<'a>>>,
    error: Option<Member<'a, ErrorFields<'a>>>,
}

/// A member's text, and its fields when it is an object (read in the same pass).
struct Member<'a, F> {
    text: &'a str,
    fields: Option<F>,
}

/// The members of `params` that methods other than `initialize` use (which is rare, and
/// serde_json reads its params).
#[derive(Default)]
struct Params<'a> {
    meta_progress_token: Option<&'a str>,
    meta_idempotency_key: Option<&'a str>,
    progress_token: Option<&'a str>,
    progress: Option<&'a str>,
    total: Option<&'a str>,
    request_id: Option<&'a str>,
    name: Option<&'a str>,
    arguments: Option<&'a str>,
    idempotency_key: Option<&'a str>,
}

#[derive(Default)]
struct ResultFields<'a> {
    protocol_version: Option<&'a str>,
    server_info: Option<&'a str>,
    is_error: bool,
}

/// `code` and `message` as written (either may be of the wrong type).
#[derive(Default)]
struct ErrorFields<'a> {
    code: Option<&'a str>,
    message: Option<&'a str>,
}

/// Reads one message (text without surrounding whitespace other than JSON's).
pub(super) fn parse_one(text: &str) -> Message {
    match read(text) {
        Some(env) => message(env),
        None => serde_reader::parse_one(text),
    }
}

/// The answer text of one message, if it is a response with an ID.
pub(super) fn answer_text(text: &str, out: &mut mcpf_model::WireMap<RequestId, String>) {
    let Some(env) = read(text) else {
        return serde_reader::answer_text(text, out);
    };
    let Some(Ok(Some(id))) = env.id.map(request_id) else {
        return;
    };
    let answer = env.result.map(|r| r.text).or(env.error.map(|e| e.text));
    if let Some(text) = answer {
        out.entry(id).or_insert_with(|| text.to_string());
    }
}

/// Whether `text` is read here rather than handed to serde_json.
#[cfg(test)]
pub(super) fn reads_in_one_pass(text: &str) -> bool {
    read(text).is_some()
}

/// Marks `bit` of `seen`; `None` if it was already set. serde_json refuses a struct whose field
/// is repeated, so a repeated member is left to it.
fn once(seen: &mut u16, bit: u16) -> Option<()> {
    (*seen & bit == 0).then(|| *seen |= bit)
}

fn non_null(text: &str) -> Option<&str> {
    (text != "null").then_some(text)
}

fn read(text: &str) -> Option<Envelope<'_>> {
    let mut c = Cursor::new(text);
    let mut env = Envelope::default();
    let mut seen = 0;
    c.members(|c, name| {
        match name {
            "jsonrpc" => {
                once(&mut seen, 1)?;
                env.jsonrpc = non_null(c.value()?);
            }
            "id" => {
                once(&mut seen, 2)?;
                env.id = Some(c.value()?);
            }
            "method" => {
                once(&mut seen, 4)?;
                env.method = method(c.value_plain()?)?;
            }
            "params" => {
                once(&mut seen, 8)?;
                env.params = member(c, read_params)?;
            }
            "result" => {
                once(&mut seen, 16)?;
                env.result = member(c, read_result)?;
            }
            "error" => {
                once(&mut seen, 32)?;
                env.error = member(c, read_error)?;
            }
            _ => {
                c.value()?;
            }
        }
        Some(())
    })?;
    c.at_end().then_some(env)
}

/// `Some(None)` for `null`; `None` (not sure) for anything but a string without escapes.
fn method((text, plain): (&str, bool)) -> Option<Option<&str>> {
    if text == "null" {
        return Some(None);
    }
    if !plain {
        return None;
    }
    text.get(1..text.len() - 1).map(Some)
}

/// The member value at the cursor; an object's fields are read by `fields` on the way.
fn member<'a, F: Default>(
    c: &mut Cursor<'a>,
    fields: impl FnOnce(&mut Cursor<'a>, &mut F) -> Option<()>,
) -> Option<Option<Member<'a, F>>> {
    let start = c.mark()?;
    if c.peek()? != b'{' {
        let text = c.value()?;
        return Some(non_null(text).map(|text| Member { text, fields: None }));
    }
    let mut f = F::default();
    fields(c, &mut f)?;
    Some(Some(Member {
        text: c.since(start),
        fields: Some(f),
    }))
}

fn read_params<'a>(c: &mut Cursor<'a>, p: &mut Params<'a>) -> Option<()> {
    let mut seen = 0;
    c.members(|c, name| {
        let slot = match name {
            "_meta" => {
                once(&mut seen, 1)?;
                return read_meta(c, p);
            }
            "progressToken" => (2, &mut p.progress_token),
            "progress" => (4, &mut p.progress),
            "total" => (8, &mut p.total),
            "requestId" => (16, &mut p.request_id),
            "name" => (32, &mut p.name),
            "arguments" => (64, &mut p.arguments),
            "idempotencyKey" => (128, &mut p.idempotency_key),
            // Not read here, but serde_json refuses params that repeat them.
            "protocolVersion" | "clientInfo" => {
                once(&mut seen, if name == "clientInfo" { 512 } else { 256 })?;
                return c.value().map(drop);
            }
            _ => return c.value().map(drop),
        };
        once(&mut seen, slot.0)?;
        *slot.1 = non_null(c.value()?);
        Some(())
    })
}

/// `params._meta`: `null` or an object (serde_json would read an array by position).
fn read_meta<'a>(c: &mut Cursor<'a>, p: &mut Params<'a>) -> Option<()> {
    if c.peek()? != b'{' {
        return (c.value()? == "null").then_some(());
    }
    let mut seen = 0;
    c.members(|c, name| {
        match name {
            "progressToken" => {
                once(&mut seen, 1)?;
                p.meta_progress_token = non_null(c.value()?);
            }
            "idempotencyKey" => {
                once(&mut seen, 2)?;
                p.meta_idempotency_key = non_null(c.value()?);
            }
            _ => {
                c.value()?;
            }
        }
        Some(())
    })
}

fn read_result<'a>(c: &mut Cursor<'a>, r: &mut ResultFields<'a>) -> Option<()> {
    let mut seen = 0;
    c.members(|c, name| {
        match name {
            "protocolVersion" => {
                once(&mut seen, 1)?;
                r.protocol_version = non_null(c.value()?);
            }
            "serverInfo" => {
                once(&mut seen, 2)?;
                r.server_info = non_null(c.value()?);
            }
            "isError" => {
                once(&mut seen, 4)?;
                // Anything but a boolean fails serde_json's read of the result fields.
                r.is_error = match c.value()? {
                    "true" => true,
                    "false" | "null" => false,
                    _ => return None,
                };
            }
            _ => {
                c.value()?;
            }
        }
        Some(())
    })
}

fn read_error<'a>(c: &mut Cursor<'a>, e: &mut ErrorFields<'a>) -> Option<()> {
    let mut seen = 0;
    c.members(|c, name| {
        match name {
            "code" => {
                once(&mut seen, 1)?;
                e.code = non_null(c.value()?);
            }
            "message" => {
                once(&mut seen, 2)?;
                e.message = non_null(c.value()?);
            }
            _ => {
                c.value()?;
            }
        }
        Some(())
    })
}

/// The message an envelope makes: the same checks, in the same order, as
/// [`serde_reader::parse_one`].
fn message(env: Envelope<'_>) -> Message {
    let id = env.id.map(request_id);
    let mut msg = match envelope_head(env.jsonrpc, id, env.method) {
        Ok(msg) => msg,
        Err(malformed) => return malformed,
    };
    if let Some(method) = env.method {
        if let Some(params) = env.params {
            params_details(method, params, &mut msg.mcp);
        }
        return msg;
    }
    match (env.result, env.error) {
        (Some(result), None) => {
            msg.kind = Kind::Response;
            if msg.id.is_none() {
                return Message::malformed_because("response without an id");
            }
            result_details(result, &mut msg.mcp);
        }
        (None, Some(error)) => {
            msg.kind = Kind::Error;
            msg.fault = fault(error);
        }
        (Some(_), Some(_)) => return Message::malformed_because("both result and error"),
        (None, None) => return Message::malformed_because("neither method, result nor error"),
    }
    msg
}

/// The ID a member holds (`None` for `null`); the scanner has checked its syntax.
fn request_id(text: &str) -> Result<Option<RequestId>, &'static str> {
    match text.as_bytes().first() {
        Some(b'"') => match plain_string(text) {
            Some(s) => Ok(Some(RequestId::String(s.to_string()))),
            None => serde_json::from_str::<String>(text)
                .map(|s| Some(RequestId::String(s)))
                .map_err(|_| "invalid string id"),
        },
        Some(b'-' | b'0'..=b'9') => Ok(Some(RequestId::Number(text.to_string()))),
        Some(b'n') => Ok(None),
        _ => Err("id is neither a string nor a number"),
    }
}

/// The contents of a string without escapes.
fn plain_string(text: &str) -> Option<&str> {
    let s = text.strip_prefix('"')?.strip_suffix('"')?;
    (!s.contains('\\')).then_some(s)
}

/// A value as text: strings unquoted, anything else as written.
fn raw_text(text: &str) -> String {
    match plain_string(text) {
        Some(s) => s.to_string(),
        None => serde_reader::raw_text(text),
    }
}

/// A number as serde_json reads it; the common small unsigned integer without its parser.
fn number(text: &str) -> Option<Number> {
    if (1..=19).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()) {
        // Nineteen digits never overflow.
        let n = text.bytes().fold(0, |n, d| n * 10 + u64::from(d - b'0'));
        return Some(Number::from(n));
    }
    serde_json::from_str(text).ok()
}

fn params_details(method: &str, params: Member<'_, Params<'_>>, details: &mut Details) {
    let Some(p) = params.fields.filter(|_| method != "initialize") else {
        return serde_reader::extract_params(method, params.text, details);
    };
    match method {
        "tools/call" => {
            let mcp = details.make_mut();
            if let Some(token) = p.meta_progress_token {
                mcp.progress_token = Some(token.to_string());
            }
            let key = p.meta_idempotency_key.or(p.idempotency_key);
            serde_reader::tool_call(mcp, p.name, p.arguments, key);
        }
        "notifications/progress" => {
            let mcp = details.make_mut();
            mcp.progress_token = p.progress_token.map(str::to_string);
            mcp.progress = p.progress.and_then(number);
            mcp.total = p.total.and_then(number);
        }
        "notifications/cancelled" => {
            let mcp = details.make_mut();
            if let Some(token) = p.meta_progress_token {
                mcp.progress_token = Some(token.to_string());
            }
            // Written even when absent, as the serde reader does: the rare fields are allocated.
            mcp.cancels = p.request_id.and_then(|t| request_id(t).ok().flatten());
        }
        _ => {
            if let Some(token) = p.meta_progress_token {
                details.make_mut().progress_token = Some(token.to_string());
            }
        }
    }
}

fn result_details(result: Member<'_, ResultFields<'_>>, details: &mut Details) {
    let Some(r) = result.fields else {
        return serde_reader::extract_result(result.text, details);
    };
    // Allocated on the first field written, as the serde reader does.
    if let Some(v) = r.protocol_version {
        details.make_mut().protocol_version = Some(raw_text(v));
    }
    if let Some(info) = r.server_info.and_then(serde_reader::peer_info) {
        details.make_mut().peer_info = Some(info);
    }
    if r.is_error {
        details.make_mut().tool_error = true;
    }
}

/// The error object's code and message. As with serde_json's read of the object, a code that is
/// not a number or a message that is not a string loses both.
fn fault(error: Member<'_, ErrorFields<'_>>) -> Option<Box<Fault>> {
    let Some(e) = error.fields else {
        return serde_reader::error_fault(error.text);
    };
    let code = match e.code {
        Some(text) => Some(serde_json::from_str::<Number>(text).ok()?),
        None => None,
    };
    let message = match e.message.map(|text| (plain_string(text), text)) {
        Some((Some(plain), _)) => Some(plain.to_string()),
        Some((None, text)) => Some(serde_json::from_str::<String>(text).ok()?),
        None => None,
    };
    Fault::boxed(code.and_then(|c| c.as_i64()), message, None)
}
