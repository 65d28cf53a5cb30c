//! The SSE events of an event-stream response. HAR keeps no time per event: events parsed
//! from the body get times spread over the response by byte offset, while an entry's
//! `_eventSourceMessages` (DevTools) carry a time each, real when it is absolute.

use serde_json::Value;

use mcpf_http::sse::{SseEvent, SseParser, SseStats};
use mcpf_model::{FrameRef, Mark, Timestamp};

use crate::timeline::{epoch_scaled, secs_to_ns};

/// Parses an event-stream body with the capture path's parser, line by line, giving each line
/// a time between `head` and `end` in proportion to its end offset: events are marked
/// estimated, and handed to `put` as they are parsed.
pub(super) fn spread_events(
    body: &[u8],
    head: Timestamp,
    end: Timestamp,
    frame: FrameRef,
    put: &mut dyn FnMut(SseEvent),
) -> SseStats {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let span = i128::from(end.0.saturating_sub(head.0).max(0));
    let total = body.len().max(1) as i128;
    let mut pos = 0;
    while pos < body.len() {
        let stop = match body[pos..].iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => {
                let mut s = pos + i + 1;
                if body[pos + i] == b'\r' && body.get(s) == Some(&b'\n') {
                    s += 1;
                }
                s
            }
            None => body.len(),
        };
        let offset = (span * stop as i128 / total) as i64;
        let mark = Mark {
            time: head.add_nanos(offset),
            frame,
        };
        parser.feed(&body[pos..stop], mark, &mut out);
        for mut ev in out.drain(..) {
            ev.estimated = true;
            put(ev);
        }
        pos = stop;
    }
    parser.finish();
    parser.stats
}

/// `_eventSourceMessages` to events; returns them and how many times had to be moved into the
/// response's span. Absolute times (Unix seconds or milliseconds, ISO 8601) are kept; relative
/// ones (a monotonic clock) are anchored at the first byte and marked estimated.
pub(super) fn messages_to_events(
    msgs: &[Value],
    head: Timestamp,
    end: Timestamp,
    frame: FrameRef,
) -> (Vec<SseEvent>, u64) {
    let raw_times: Vec<Option<(f64, bool)>> = msgs
        .iter()
        .map(|m| {
            m.get("time")
                .or_else(|| m.get("timestamp"))
                .and_then(message_time)
        })
        .collect();
    let first_relative = raw_times
        .iter()
        .flatten()
        .find(|(_, absolute)| !absolute)
        .map(|(t, _)| *t);
    let mut last_event_id = String::new();
    let mut out = Vec::new();
    let mut clamped = 0;
    let mut prev = head;
    for (i, m) in msgs.iter().enumerate() {
        let (event, id, data) = message_fields(m);
        if let Some(id) = &id {
            last_event_id = id.clone();
        }
        let (time, estimated) = match raw_times[i] {
            Some((t, true)) => (epoch_scaled(t, 1_000_000_000), false),
            Some((t, false)) => (
                head.add_nanos(secs_to_ns(t - first_relative.unwrap_or(t))),
                true,
            ),
            None => (prev, true),
        };
        let bounded = time.clamp(prev, end.max(prev));
        if bounded != time && !estimated {
            clamped += 1;
        }
        prev = bounded;
        let priming = id.is_some() && data.is_empty();
        out.push(SseEvent {
            index: i as u32,
            id: id.map(Into::into),
            last_event_id: last_event_id.as_str().into(),
            event: event.into(),
            data,
            retry: None,
            priming,
            dispatched: true,
            mark: Mark {
                time: bounded,
                frame,
            },
            after_gap: false,
            truncated: false,
            estimated,
        });
    }
    (out, clamped)
}

/// A message's `(event name, id, data)`.
fn message_fields(m: &Value) -> (String, Option<String>, String) {
    let text = |keys: &[&str]| {
        keys.iter().find_map(|k| match m.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        })
    };
    let data = match m.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    let event = text(&["eventName", "event", "type"])
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "message".into());
    // DevTools reports "no id" as an empty string: read it so.
    let id = text(&["eventId", "id", "lastEventId"]).filter(|s| !s.is_empty() && !s.contains('\0'));
    (event, id, data)
}

/// A message time as `(value, absolute)`: absolute values are Unix seconds.
fn message_time(v: &Value) -> Option<(f64, bool)> {
    let n = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(n) => n,
            Err(_) => {
                let t = Timestamp::parse_rfc3339(s)?;
                return Some((t.0 as f64 / 1e9, true));
            }
        },
        _ => return None,
    };
    if !n.is_finite() || n < 0.0 {
        return None;
    }
    Some(if n >= 1e11 {
        // Milliseconds: whole seconds and the rest, so no precision is lost on the way.
        ((n / 1000.0).trunc() + (n % 1000.0) / 1000.0, true)
    } else if n >= 1e8 {
        (n, true)
    } else {
        (n, false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_events_by_byte_offset() {
        let body = b"id: 1\r\ndata: a\r\n\r\nid: 2\r\ndata: b\r\n\r\n";
        let frame = FrameRef::new(0, 1);
        let mut ev = Vec::new();
        let stats = spread_events(body, Timestamp(1_000), Timestamp(2_000), frame, &mut |e| {
            ev.push(e)
        });
        assert_eq!(ev.len(), 2);
        assert_eq!(stats.events, 2);
        assert!(ev.iter().all(|e| e.estimated));
        assert_eq!(ev[0].mark.time, Timestamp(1_500));
        assert_eq!(ev[1].mark.time, Timestamp(2_000));
    }

    #[test]
    fn message_times_absolute_and_relative() {
        assert_eq!(
            message_time(&serde_json::json!(1_796_013_365.5)),
            Some((1_796_013_365.5, true))
        );
        assert_eq!(
            message_time(&serde_json::json!(1_796_013_365_500u64)),
            Some((1_796_013_365.5, true))
        );
        assert_eq!(message_time(&serde_json::json!(12.5)), Some((12.5, false)));
        assert!(
            message_time(&serde_json::json!("2026-11-30T04:36:05Z"))
                .unwrap()
                .1
        );
    }
}
