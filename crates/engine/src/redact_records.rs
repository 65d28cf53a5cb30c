//! Secrets out of the events an extract run writes, by the rules of every other output
//! (`mcpf_report::redact`): a record file is shipped to other machines and kept.

use mcpf_http::{Body, Headers, HttpEvent};
use mcpf_report::redact::Redactor;

/// Redacts in place what `event` carries of header values, targets, bodies, SSE data and
/// anomaly sentences. Identifiers (session, request and event IDs) are evidence and stay, as in
/// the reports.
pub(crate) fn event(r: &Redactor, event: &mut HttpEvent) {
    if !r.enabled() {
        return;
    }
    match event {
        HttpEvent::Request(req) => {
            headers(r, &mut req.headers);
            text(r, &mut req.target);
            body(r, &mut req.body);
        }
        HttpEvent::ResponseHead(head) => headers(r, &mut head.headers),
        HttpEvent::SseEvent { event, .. } => text(r, &mut event.data),
        HttpEvent::ResponseEnd(end) => body(r, &mut end.body),
        HttpEvent::Anomaly(a) => text(r, &mut a.detail),
        _ => {}
    }
}

fn headers(r: &Redactor, headers: &mut Headers) {
    for (name, value) in &mut headers.0 {
        *value = r.header(name, value);
    }
}

fn text(r: &Redactor, s: &mut String) {
    if let std::borrow::Cow::Owned(redacted) = r.text(s) {
        *s = redacted;
    }
}

/// A body's text; bytes that are not UTF-8 (compressed bodies not decoded) are kept as they are,
/// like the reports' hex views, which show no text of them either.
fn body(r: &Redactor, body: &mut Body) {
    let Ok(s) = std::str::from_utf8(&body.data) else {
        return;
    };
    if let std::borrow::Cow::Owned(redacted) = r.text(s) {
        body.data = redacted.into_bytes();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_go_and_identifiers_stay() {
        let r = Redactor::new(true);
        let mut h = Headers(vec![
            (
                "Authorization".into(),
                "Bearer sk-ant-abcdefghijklmnopqrstuvwxyz".into(),
            ),
            ("Mcp-Session-Id".into(), "3f2a-session".into()),
        ]);
        headers(&r, &mut h);
        assert!(h.0[0].1.starts_with("Bearer [redacted"), "{}", h.0[0].1);
        assert_eq!(h.0[1].1, "3f2a-session");
        let mut b = Body {
            data: br#"{"params":{"arguments":{"password":"hunter2hunter2"}}}"#.to_vec(),
            ..Body::default()
        };
        body(&r, &mut b);
        let s = String::from_utf8(b.data).unwrap();
        assert!(!s.contains("hunter2"), "{s}");
        let mut binary = Body {
            data: vec![0x1f, 0x8b, 0xff],
            ..Body::default()
        };
        body(&r, &mut binary);
        assert_eq!(binary.data, vec![0x1f, 0x8b, 0xff]);
    }
}
