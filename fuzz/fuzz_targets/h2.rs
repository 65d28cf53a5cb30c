//! HTTP/2 with prior knowledge: the connection preface, then arbitrary client and server bytes
//! as one TCP connection (frames, HPACK blocks and their dynamic tables, flow control), through
//! the whole `analyze` run.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mcpf_fuzz::analyze_h2(data);
});
