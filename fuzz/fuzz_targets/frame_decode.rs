//! Arbitrary frames of a chosen link type: link, VLAN, IPv4/IPv6 and TCP decoding, then the rest
//! of the pipeline. The first byte picks the link type; frames are separated by 0xFF 0x00 0xFF.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpf_fuzz::analyze_frames(data));
