//! Arbitrary bytes as an SSE body, fed in pieces whose sizes the first byte chooses.
#![no_main]
use mcpf_http::sse::SseParser;
use mcpf_model::{FrameRef, Mark, Timestamp};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let step = step.max(1) as usize;
    let mark = Mark {
        time: Timestamp::from_secs_nanos(1_796_000_000, 0),
        frame: FrameRef::new(0, 1),
    };
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    for piece in body.chunks(step) {
        parser.feed(piece, mark, &mut out);
        out.clear();
    }
    parser.finish();
});
