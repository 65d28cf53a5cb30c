//! Arbitrary frames of a chosen link type: link, VLAN, IPv4/IPv6 and TCP decoding, then the rest
//! of the pipeline. The first byte picks the link type; frames are separated by 0xFF 0x00 0xFF.
#![no_main]
use mcpf_fuzz::LINKS;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let link = LINKS[pick as usize % LINKS.len()];
    let frames = mcpf_fuzz::split_frames(rest);
    mcpf_fuzz::analyze_frames(link, &frames);
});
