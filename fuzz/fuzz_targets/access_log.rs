//! Arbitrary text as a JSON access log (nginx, Envoy, Caddy and generic keys are all tried by
//! the reader), through the MCP and detect stages.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut analysis = mcpf_fuzz::Analysis::default();
    let _ = mcpf_ingest::read_access_log_text("fuzz.jsonl", text, 0, None, &mut analysis);
    analysis.finish();
});
