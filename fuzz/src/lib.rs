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
use mcpf_mcp::model::Session;

mod conversation;
pub use conversation::{Bytes, LINKS, conversation_pcap, frames_pcap, split_frames};

/// Sessions waiting for the other observations of their session ID, as the binary holds them.
type Held = Arc<Mutex<Vec<Box<Session>>>>;

/// The MCP and detect stages as the binary runs them: sessions finalized as they end (no HAR or
/// log input), each through the detectors; those with other observations of their session ID
/// (replicas, hops) through the detectors together, compared.
pub struct Analysis {
    builder: Builder,
    detector: Arc<Mutex<Detector>>,
    held: Held,
}

impl Default for Analysis {
    fn default() -> Self {
        // Two names, as for two inputs: the hop comparison runs (and finds one input's pairs
        // all of one input).
        let detector = Arc::new(Mutex::new(
            Detector::new().with_inputs(vec!["a".into(), "b".into()]),
        ));
        let held: Held = Arc::default();
        let (d, h) = (detector.clone(), held.clone());
        let builder = Builder::new()
            .with_early_finalize(true)
            .with_session_callback(Box::new(move |s| {
                if s.same_session_as.is_empty() {
                    d.lock().unwrap().session(&s);
                } else {
                    h.lock().unwrap().push(s);
                }
            }));
        Analysis {
            builder,
            detector,
            held,
        }
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
        let Analysis {
            builder,
            detector,
            held,
        } = self;
        let (left, _, _) = builder.finish();
        let mut d = Arc::try_unwrap(detector)
            .ok()
            .expect("the builder held the only other handle")
            .into_inner()
            .unwrap();
        for s in &left {
            d.session(s);
        }
        let mut held = std::mem::take(&mut *held.lock().unwrap());
        held.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        for group in held.chunk_by(|a, b| a.session_id == b.session_id) {
            let refs: Vec<&Session> = group.iter().map(|s| &**s).collect();
            d.group(&refs);
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
