//! Arbitrary bytes as a capture file (pcap, pcapng, gzip of either) through the whole pipeline.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpf_fuzz::analyze_capture(data));
