//! The one-pass reader against the serde_json reader it replaced: the same `Message`s and the
//! same answer texts for any payload, valid or not.

use proptest::prelude::*;

use super::{Message, RequestId, answer_texts, envelope, parse_payload, serde_reader, trim_ascii};

/// [`parse_payload`] as it was: serde_json only.
fn reference(bytes: &[u8]) -> Vec<Message> {
    let Ok(text) = std::str::from_utf8(trim_ascii(bytes)) else {
        return vec![Message::malformed_because("not UTF-8")];
    };
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if text.is_empty() {
        return Vec::new();
    }
    serde_reader::parse_payload_str(text)
}

/// [`answer_texts`] as it was.
fn reference_answers(bytes: &[u8]) -> mcpf_model::WireMap<RequestId, String> {
    let mut out = mcpf_model::WireMap::default();
    if let Ok(text) = std::str::from_utf8(trim_ascii(bytes)) {
        serde_reader::answer_texts(text, &mut out);
    }
    out
}

fn same_as_reference(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert_eq!(parse_payload(bytes), reference(bytes), "{text}");
    assert_eq!(answer_texts(bytes), reference_answers(bytes), "{text}");
}

/// Read by the one-pass reader, not handed to serde_json.
fn one_pass(text: &str) -> bool {
    envelope::reads_in_one_pass(text)
}

#[test]
fn common_shapes_take_the_one_pass_reader() {
    for text in [
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":3,"total":10,"message":"3 of 10"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s","arguments":{"b":1,"a":[2]},"_meta":{"progressToken":"t","idempotencyKey":"k"}}}"#,
        r#"{"jsonrpc":"2.0","id":"a\"b","result":{"content":[{"type":"text","text":"\u00e9"}],"isError":false}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
        r#" { "jsonrpc" : "2.0" , "id" : 1.0 , "result" : null , "error" : { } } "#,
    ] {
        assert!(one_pass(text), "{text}");
        same_as_reference(text.as_bytes());
    }
}

#[test]
fn doubtful_shapes_go_to_serde_json() {
    for text in [
        // A name spelled with an escape could be any member.
        r#"{"jsonrpc":"2.0","\u0069d":1,"method":"ping"}"#,
        // serde_json refuses a repeated field ("duplicate field"), at any level it reads.
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":{"progress":1,"progress":2}}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":{"_meta":{"progressToken":1,"progressToken":2}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2}}"#,
        // serde_json reads a struct from an array, by position.
        r#"{"jsonrpc":"2.0","method":"x","params":{"_meta":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"isError":1}}"#,
        "[1]",
        "{\"jsonrpc\":\"2.0\"",
    ] {
        assert!(!one_pass(text), "{text}");
        same_as_reference(text.as_bytes());
    }
}

#[test]
fn tricky_payloads_match_the_reference() {
    for text in [
        r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1e5,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":"\u0041","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":null,"id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":-0,"total":1e400}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":18446744073709551616,"total":"9"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":{"progressToken":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\u0041"}}"#,
        r#"{"jsonrpc":"2.0","method":"resources/read","params":{"_meta":{"progressToken":{"a": [1, 2]}}}}"#,
        r#"{"jsonrpc":"2.0","method":"resources/read","params":{"_meta":null,"progressToken":1}}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[null,"n"]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"text":"a \\u b"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"text":"isError"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":["2025-06-18",{"name":"s"},true]}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":7,"serverInfo":{"name":"a\nb"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-0,"message":"\u00e9"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":7}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":1e400,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":[-32600,"Bad"]}"#,
        r#"{"jsonrpc":"2.0","id":1,"error":"Bad"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#,
        r#"{"jsonrpc":"2.0","id":01,"method":"ping"}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\u{c}\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"ping\"}",
        r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":1,"result":[]}]"#,
        r#"[{"jsonrpc":"2.0","id":1,"result":{}},]"#,
        "[]",
        "[ ]x",
        "null",
        "\"s\"",
    ] {
        same_as_reference(text.as_bytes());
    }
    same_as_reference(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}");
}

#[test]
fn deep_values_fall_back_without_recursion() {
    for depth in [63, 64, 65, 100_000] {
        let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"v":{deep}}}}}"#);
        assert_eq!(one_pass(&text), depth <= 64, "{depth}");
        same_as_reference(text.as_bytes());
    }
}

/// Scalars, many of them on an edge of the grammar or of serde_json's reading.
fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "0", "1", "-1", "2.0", "-0", "1.0", "1e5", "1E-2", "0.5", "-32600", "1e400",
            "18446744073709551615", "18446744073709551616", "9223372036854775808",
            "-9223372036854775809", "123456789012345678901234567890", "true", "false", "null",
            r#""""#, r#""2.0""#, r#""\u0041""#, r#""q\"q""#, r#""b\\u""#, r#""\ud800""#,
            r#""\/\b\f\n\r\t""#, r#""é""#, r#""isError""#, r#""progressToken""#,
            r#""tools/call""#, r#""notifications/progress""#,
        ])
        .prop_map(str::to_string),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| serde_json::to_string(&f).unwrap()),
        1 => "[a-z/ ]{0,6}".prop_map(|s| format!("\"{s}\"")),
    ]
}

/// Member names: the ones either reader looks for, some spelled with escapes, and others.
fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "jsonrpc",
        "id",
        "method",
        "params",
        "result",
        "error",
        "_meta",
        "name",
        "arguments",
        "idempotencyKey",
        "progressToken",
        "progress",
        "total",
        "requestId",
        "protocolVersion",
        "clientInfo",
        "serverInfo",
        "isError",
        "code",
        "message",
        "version",
        "content",
        "x",
        r"\u0069sError",
        r"progr\u0065ssToken",
        r"\u0069d",
        "",
    ])
    .prop_map(|n| format!("\"{n}\""))
}

/// A JSON value as text, nested, with the spacing `ws` between tokens.
fn value(ws: &'static str) -> impl Strategy<Value = String> {
    scalar().prop_recursive(4, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4)
                .prop_map(move |items| format!("[{ws}{}{ws}]", items.join(&format!(",{ws}")))),
            prop::collection::vec((name(), inner), 0..4).prop_map(move |m| object(&m, ws)),
        ]
    })
}

fn object(members: &[(String, String)], ws: &str) -> String {
    let members: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{k}{ws}:{ws}{v}"))
        .collect();
    format!("{{{ws}{}{ws}}}", members.join(&format!("{ws},{ws}")))
}

/// A member's value: mostly a scalar, whose reading the readers differ most on.
fn member_value(ws: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![3 => scalar(), 1 => value(ws)]
}

/// An object with members named from `names`, or now and then any value.
fn fields(names: Vec<&'static str>, ws: &'static str) -> impl Strategy<Value = String> {
    let member = (
        prop::sample::select(names).prop_map(|n| format!("\"{n}\"")),
        member_value(ws),
    );
    prop_oneof![
        4 => prop::collection::vec(member, 0..5).prop_map(move |m| object(&m, ws)),
        1 => value(ws),
    ]
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "initialize", "tools/call", "notifications/progress", "notifications/cancelled",
            "notifications/message", "resources/read", "ping", "eth_call", r"tools\/call",
        ])
        .prop_map(|m| format!("\"{m}\"")),
        1 => scalar(),
    ]
}

/// A JSON-RPC message, often valid, with members in any order, sometimes repeated.
fn message(ws: &'static str) -> impl Strategy<Value = String> {
    let meta = fields(vec!["progressToken", "idempotencyKey", "x"], ws);
    let params = prop_oneof![
        4 => prop::collection::vec(
            prop_oneof![
                (Just("\"_meta\"".to_string()), meta),
                (
                    prop::sample::select(vec![
                        "name", "arguments", "idempotencyKey", "progressToken", "progress",
                        "total", "requestId", "protocolVersion", "message",
                    ])
                    .prop_map(|n| format!("\"{n}\"")),
                    member_value(ws),
                ),
                (Just("\"clientInfo\"".to_string()), fields(vec!["name", "version"], ws)),
            ],
            0..5,
        )
        .prop_map(move |m| object(&m, ws)),
        1 => value(ws),
    ];
    let result = fields(
        vec![
            "protocolVersion",
            "serverInfo",
            "isError",
            "content",
            r"\u0069sError",
        ],
        ws,
    );
    let error = fields(vec!["code", "message", "data"], ws);
    let envelope = (
        prop::option::weighted(
            0.9,
            prop_oneof![4 => Just("\"2.0\"".to_string()), 1 => scalar()],
        ),
        prop::option::weighted(0.8, prop_oneof![3 => scalar(), 1 => value(ws)]),
        prop::option::of(method()),
        prop::option::of(params),
        prop::option::of(result),
        prop::option::of(error),
        prop::collection::vec((name(), value(ws)), 0..2),
        0u8..4,
    );
    envelope
        .prop_flat_map(
            |(jsonrpc, id, method, params, result, error, extra, shape)| {
                // Mostly one kind of message; now and then any mix of members.
                let method = method.filter(|_| matches!(shape, 0 | 3));
                let result = result.filter(|_| matches!(shape, 1 | 3));
                let error = error.filter(|_| matches!(shape, 2 | 3));
                let mut members = extra;
                for (n, v) in [
                    ("jsonrpc", jsonrpc),
                    ("id", id),
                    ("method", method),
                    ("params", params),
                    ("result", result),
                    ("error", error),
                ] {
                    if let Some(v) = v {
                        members.push((format!("\"{n}\""), v));
                    }
                }
                Just(members).prop_shuffle()
            },
        )
        .prop_map(move |m| object(&m, ws))
}

/// Spacing, one kind per payload.
fn spacing() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", " ", "\n\t", "\r\n  "])
}

/// A payload: a message, a batch, or one of them damaged.
fn payload() -> impl Strategy<Value = Vec<u8>> {
    spacing().prop_flat_map(|ws| {
        let text = prop_oneof![
            4 => message(ws),
            1 => prop::collection::vec(message(ws), 0..4)
                .prop_map(move |m| format!("{ws}[{}]{ws}", m.join(&format!(",{ws}")))),
            1 => value(ws),
        ];
        (text, any::<prop::sample::Index>(), 0u8..6, any::<u8>()).prop_map(
            |(text, at, damage, byte)| {
                let mut b = text.into_bytes();
                let at = at.index(b.len() + 1);
                match damage {
                    0 => b.truncate(at),
                    1 => b.insert(at, byte),
                    2 if at < b.len() => b[at] = byte,
                    _ => {}
                }
                b
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16384))]

    #[test]
    fn the_one_pass_reader_agrees_with_serde_json(bytes in payload()) {
        same_as_reference(&bytes);
    }
}
