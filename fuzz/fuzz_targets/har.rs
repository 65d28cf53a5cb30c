//! Arbitrary text as a HAR file, through the HAR reader and the MCP and detect stages.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut analysis = mcpf_fuzz::Analysis::of(mcpf_model::SourceFormat::Har);
    let _ = mcpf_ingest::read_har_text("fuzz.har", text, 0, &mut analysis);
    analysis.finish();
});
