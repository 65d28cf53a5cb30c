//! Arbitrary client and server bytes as one TCP connection, cut into segments that are
//! reordered, repeated or lost as the control bytes say: reassembly, HTTP/1.1 framing, chunked
//! and content decoding, SSE, JSON-RPC and the MCP stage, through a real pcap.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mcpf_fuzz::analyze_capture(&mcpf_fuzz::conversation_pcap(data));
});
