//! What the fuzz targets share: the production path of the engine (`mcpf-engine`: capture
//! bytes through the shards, the MCP stage, the finalizer with every detector and the report
//! assembled and written as JSON; or HTTP events from the ingest readers through the same session
//! stage), keeping nothing but what the stages keep themselves; and a way to turn arbitrary bytes
//! into a TCP conversation cut into segments, some reordered, repeated or lost, written as a pcap.

use mcpf_engine::report::analyze::{RecordFormat, SessionWriter, write_json};
use mcpf_engine::report::redact::{Redacting, Redactor};
use mcpf_engine::{Engine, Opened, SessionStage, Settings};
use mcpf_http::{HttpEvent, HttpSink};
use mcpf_model::SourceFormat;

mod conversation;
pub use conversation::{Bytes, LINKS, conversation_pcap, frames_pcap, split_frames};

/// The session stage as the engine runs it behind a HAR file or a log: sessions finalized at
/// the end (a HAR or log is matched with captures first), each through the detectors; those
/// with other observations of their session ID (replicas, hops) through them together.
pub struct Analysis {
    stage: SessionStage,
}

impl Analysis {
    /// For one input of `source`'s format.
    pub fn of(source: SourceFormat) -> Analysis {
        Analysis {
            stage: SessionStage::without_records(&Settings::default(), vec![source]),
        }
    }

    /// Ends the run: the sessions still open are analysed and detected too.
    pub fn finish(self) {
        let _ = self.stage.finish();
    }
}

impl HttpSink for Analysis {
    fn on_http(&mut self, event: HttpEvent) {
        self.stage.on_http(event);
    }
}

/// A capture file's bytes (pcap, pcapng, gzip of either) through the whole run of `analyze`,
/// on one thread and on a reading thread with a worker, and the JSON report written.
pub fn analyze_capture(bytes: &[u8]) {
    for threads in [1, 2] {
        let Ok(inputs) = Opened::capture_bytes("fuzz.pcap", bytes.to_vec()) else {
            return;
        };
        let engine = Engine::new(Settings {
            threads,
            workers: Some(1),
            ..Settings::default()
        });
        let redactor = Redactor::new(true);
        let writer = SessionWriter::new(
            RecordFormat::Pretty,
            true,
            redactor,
            inputs.paths.clone(),
        );
        let Ok(mut run) = engine.run(inputs, writer, &mut ()) else {
            return;
        };
        let selection = engine.settings().selection.clone();
        let mut out = Redacting::new(std::io::sink(), redactor);
        let _ = write_json(&mut out, &mut run.report, &selection, &redactor);
    }
}

/// A `frame_decode` input (link pick, then raw frames) through link, IP and TCP decoding,
/// reassembly and the rest, as the pcap of that link type it makes.
pub fn analyze_frames(data: &[u8]) {
    analyze_capture(&frames_pcap(data));
}

/// HTTP/2 with prior knowledge: the client's bytes open with the connection preface, the rest
/// of the input is a [`conversation_pcap`] (frames, HPACK header blocks with their dynamic
/// tables, flow control, CONTINUATION, SETTINGS, GOAWAY) through the whole `analyze` run.
pub fn analyze_h2(data: &[u8]) {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let head = data.len().min(2);
    let mut conversation = data[..head].to_vec();
    conversation.extend_from_slice(PREFACE);
    conversation.extend_from_slice(&data[head..]);
    analyze_capture(&conversation_pcap(&conversation));
}

/// TLS records of one connection, both directions, through the decryption a key log allows:
/// the input is a key log's length (2 bytes, big-endian), the key log's text (so the fuzzer
/// can name the ClientHello random it writes and the secrets), then the connection's bytes,
/// pieces separated by 0xFF 0x00 0xFF, each piece the other direction's.
pub fn tls_records(data: &[u8]) {
    conversation::feed_tls_records(data);
}
