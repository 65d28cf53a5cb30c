//! Arbitrary text as an access log, through the MCP and detect stages: as JSON Lines (nginx with
//! any key names, Envoy, Caddy, HAProxy, Traefik and generic keys are all tried by the reader),
//! and as nginx text lines in the `combined` format with MCP fields (`--log-format`).
#![no_main]

const TEXT_FORMAT: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time "$http_mcp_session_id" "$sent_http_mcp_session_id" "$http_last_event_id""#;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut analysis = mcpf_fuzz::Analysis::of(mcpf_model::SourceFormat::AccessLog(mcpf_model::LogFlavor::Nginx));
    let _ = mcpf_ingest::read_access_log_text("fuzz.jsonl", text, 0, None, &mut analysis);
    analysis.finish();
    let Ok(map) = mcpf_ingest::LogMap::text_format(TEXT_FORMAT) else {
        return;
    };
    let mut analysis = mcpf_fuzz::Analysis::of(mcpf_model::SourceFormat::AccessLog(mcpf_model::LogFlavor::Nginx));
    let _ = mcpf_ingest::read_access_log_text("fuzz.log", text, 0, Some(&map), &mut analysis);
    analysis.finish();
});
