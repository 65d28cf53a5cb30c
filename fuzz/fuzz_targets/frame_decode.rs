//! Arbitrary frames of a chosen link type: link, VLAN, IPv4/IPv6 and TCP decoding, then the rest
//! of the pipeline. The first byte picks the link type; frames are separated by 0xFF 0x00 0xFF.
#![no_main]
use mcpf_capture::decode::linktype;

const LINKS: [i32; 6] = [
    linktype::ETHERNET,
    linktype::NULL,
    linktype::RAW_12,
    linktype::RAW_14,
    113, // Linux cooked
    276, // Linux cooked v2
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let link = LINKS[pick as usize % LINKS.len()];
    let mut frames: Vec<&[u8]> = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 3 <= rest.len() {
        if rest[i..i + 3] == [0xFF, 0x00, 0xFF] {
            frames.push(&rest[start..i]);
            start = i + 3;
            i += 3;
        } else {
            i += 1;
        }
    }
    frames.push(&rest[start..]);
    mcpf_fuzz::analyze_frames(link, &frames);
});
