//! What the fuzz targets share: the production pipeline, from capture bytes (or raw frames, or
//! HTTP events from the ingest readers) through the MCP stage and every detector, keeping
//! nothing but what the stages keep themselves; and a way to turn arbitrary bytes into a TCP
//! conversation cut into segments, some reordered, repeated or lost, written as a pcap.

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use mcpf_capture::reader::{CaptureReader, Frame};
use mcpf_capture::{CaptureStage, Settings};
use mcpf_detect::Detector;
use mcpf_http::{HttpEvent, HttpSink, Stage};
use mcpf_mcp::Builder;

mod conversation;
pub use conversation::{Bytes, LINKS, conversation_pcap, frames_pcap, split_frames};

/// The MCP and detect stages as the binary runs them: sessions finalized as they end (no HAR or
/// log input), each through the detectors.
pub struct Analysis {
    builder: Builder,
    detector: Arc<Mutex<Detector>>,
}

impl Default for Analysis {
    fn default() -> Self {
        let detector = Arc::new(Mutex::new(Detector::new()));
        let d = detector.clone();
        let builder = Builder::new()
            .with_early_finalize(true)
            .with_session_callback(Box::new(move |s| {
                d.lock().unwrap().session(&s);
            }));
        Analysis { builder, detector }
    }
}

impl HttpSink for Analysis {
    fn on_http(&mut self, event: HttpEvent) {
        self.builder.on_http(event);
    }
}

impl Analysis {
    /// Ends the run: the sessions still open are analysed and detected too.
    pub fn finish(self) {
        let Analysis { builder, detector } = self;
        let (left, _, _) = builder.finish();
        let mut d = Arc::try_unwrap(detector)
            .ok()
            .expect("the builder held the only other handle")
            .into_inner()
            .unwrap();
        for s in &left {
            d.session(s);
        }
        let _ = d.finish();
    }
}

/// A capture file's bytes (pcap, pcapng, gzip of either) through the whole pipeline.
pub fn analyze_capture(bytes: &[u8]) {
    let Ok(mut reader) = CaptureReader::open(Box::new(Cursor::new(bytes.to_vec())), 0) else {
        return;
    };
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Analysis::default());
    // A reader error ends the input as it does in production (with what was read kept).
    while let Ok(Some(frame)) = reader.next_frame() {
        capture.frame(&frame, &mut http);
    }
    capture.finish(&mut http);
    http.sink.finish();
}

/// Raw frames of one link type through link, IP and TCP decoding, reassembly and the rest.
pub fn analyze_frames(link: i32, frames: &[&[u8]]) {
    let mut capture = CaptureStage::new(Settings::default(), 1);
    let mut http = Stage::new(Analysis::default());
    for (i, data) in frames.iter().enumerate() {
        let frame = Frame {
            time: mcpf_model::Timestamp::from_secs_nanos(1_796_000_000 + i as i64, 0),
            frame: mcpf_model::FrameRef::new(0, i as u64 + 1),
            linktype: link,
            data,
            orig_len: data.len() as u32,
        };
        capture.frame(&frame, &mut http);
    }
    capture.finish(&mut http);
    http.sink.finish();
}
