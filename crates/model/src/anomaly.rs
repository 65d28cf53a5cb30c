//! Anomalies: something about the bytes worth a line of the report, made by every stage that
//! reads them (TLS, HTTP/1.1, HTTP/2, the access-log reader). Each is a named record with its
//! connection, direction and frame, as Zeek's `weird.log` names its weirds, so that reports
//! count and list them by kind and a reader can search for one by its stable name.

use crate::{ConnId, Direction, Mark};

/// An anomaly of one connection: what kind, where, and today's sentence for it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Anomaly {
    pub kind: AnomalyKind,
    pub conn: ConnId,
    pub dir: Direction,
    /// The frame (and time) where it was seen.
    pub mark: Mark,
    /// What a person needs beyond the kind: the sizes, frames, stream numbers and the error a
    /// parser gave, in one sentence.
    pub detail: String,
}

/// Declares [`AnomalyKind`] once: each variant with its stable name, so the list of every kind
/// ([`AnomalyKind::ALL`]) and the names cannot drift apart.
macro_rules! anomaly_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident => $name:literal,)*) => {
        /// The kinds of anomaly, one per condition a stage reports. Their names (`name`) are
        /// part of the JSON report: a kind is added, never renamed.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum AnomalyKind {
            $($(#[doc = $doc])* $variant,)*
        }

        impl AnomalyKind {
            /// Every kind, in declaration order.
            pub const ALL: &[AnomalyKind] = &[$(AnomalyKind::$variant,)*];

            /// The stable snake_case name reports use.
            pub fn name(self) -> &'static str {
                match self {
                    $(AnomalyKind::$variant => $name,)*
                }
            }
        }
    };
}

anomaly_kinds! {
    /// A head over 64 KiB that could not be kept within the limit: skipped.
    HeadTooLarge => "head_too_large",
    /// A head over 64 KiB: header lines past the limit dropped (the framing ones kept).
    HeadLinesDropped => "head_lines_dropped",
    /// Header fields past the first 128 of a head dropped (HTTP/1.1 and HTTP/2).
    HeaderFieldsDropped => "header_fields_dropped",
    /// HTTP/2 header fields dropped past the decoded bytes a header block keeps, or
    /// pseudo-headers repeated.
    HeaderBytesDropped => "header_bytes_dropped",
    /// Both `Transfer-Encoding` and `Content-Length` (RFC 9112 §6.3: Transfer-Encoding wins).
    ContentLengthAndTransferEncoding => "content_length_and_transfer_encoding",
    /// A request's `Transfer-Encoding` without `chunked` last: read until close.
    TransferEncodingNotChunked => "transfer_encoding_not_chunked",
    /// A `Content-Length` that is not a number.
    ContentLengthInvalid => "content_length_invalid",
    /// Several `Content-Length` values that disagree.
    ContentLengthConflicting => "content_length_conflicting",
    /// Control characters in a head (parsed with them shown as `?`).
    ControlCharactersInHead => "control_characters_in_head",
    /// A head that ended before it was whole.
    IncompleteHead => "incomplete_head",
    /// A head the HTTP parser rejected.
    MalformedHead => "malformed_head",
    /// Chunked framing that broke: the message is cut there.
    BadChunkedFraming => "bad_chunked_framing",
    /// No chunk boundary after bytes the snap length cut: the message ends there.
    ChunkedFramingCutBySnaplen => "chunked_framing_cut_by_snaplen",
    /// A body its `Content-Encoding` could not decode (damaged bytes).
    BodyNotDecodable => "body_not_decodable",
    /// A compressed body that ends before its compressed stream does.
    CompressedBodyEndsEarly => "compressed_body_ends_early",
    /// Decoding stopped at the decoding budget (a decompression bomb, or a body too large).
    DecodingBudgetReached => "decoding_budget_reached",
    /// Decoding stopped at the budget of decoded bytes of all the bodies of a connection.
    ConnectionDecodingBudgetReached => "connection_decoding_budget_reached",
    /// An event stream that yielded more SSE events from one packet than are handed on: the
    /// rest of it is not read.
    SseEventsPerPacket => "sse_events_per_packet",
    /// A brotli body not decoded: the bodies in progress held the windows allowed together.
    BrotliWindowsHeld => "brotli_windows_held",
    /// A body or event kept shorter than its own cap: the messages in progress held the bytes
    /// allowed together.
    MessageCutByHeldBytes => "message_cut_by_held_bytes",
    /// A JSON body over 16 MiB kept with its strings cut.
    JsonBodyShrunk => "json_body_shrunk",
    /// A head lost in a capture gap, start line and all.
    HeadLostInGap => "head_lost_in_gap",
    /// A head cut by a capture gap: its start line and whole header lines kept.
    HeadCutByGap => "head_cut_by_gap",
    /// Retransmitted bytes that differ from the first copy (Zeek's `rexmit_inconsistency`).
    RetransmissionInconsistent => "retransmission_inconsistent",
    /// A response whose head a capture gap took: its request is left unanswered by the capture.
    ResponseLostInGap => "response_lost_in_gap",
    /// A response picked up in the middle of its body (no request or head in the capture).
    MidstreamResync => "midstream_resync",
    /// The connection closed in the middle of a head.
    ConnectionClosedInHead => "connection_closed_in_head",
    /// A client's bytes on an HTTP/2 connection that do not start with the preface.
    H2BadPreface => "h2_bad_preface",
    /// An HTTP/2 frame that breaks the framing rules (RFC 9113 §4, §6): the direction is read
    /// no further.
    H2FrameError => "h2_frame_error",
    /// An HTTP/2 header block over its cap: the direction is read no further.
    H2HeaderBlockTooLarge => "h2_header_block_too_large",
    /// An HTTP/2 header block HPACK could not decode: the direction is read no further.
    H2HpackError => "h2_hpack_error",
    /// Bytes missing from the capture on an HTTP/2 connection: the direction is read no further.
    H2CaptureGap => "h2_capture_gap",
    /// More HTTP/2 streams open at once than are followed.
    H2TooManyStreams => "h2_too_many_streams",
    /// An HTTP/2 stream opened after the server's GOAWAY.
    H2StreamAfterGoaway => "h2_stream_after_goaway",
    /// An HTTP/2 response that went on past what is held while its request is still sent.
    H2ResponseQueueFull => "h2_response_queue_full",
    /// An HTTP/2 stream reset other than as an ordinary end.
    H2StreamReset => "h2_stream_reset",
    /// An HTTP/2 GOAWAY with an error, or with streams left unprocessed.
    H2Goaway => "h2_goaway",
    /// An HTTP/2 stream that ended while its sender waited for flow-control credit.
    H2FlowControlStall => "h2_flow_control_stall",
    /// Envoy response flags on an access-log line (a reset, a timeout, a termination).
    EnvoyResponseFlags => "envoy_response_flags",
    /// A TLS connection whose client random has no secret in the key log.
    TlsNoKey => "tls_no_key",
    /// A resumed TLS session whose secret is not in the key log.
    TlsNoKeyResumed => "tls_no_key_resumed",
    /// A TLS cipher suite this build does not decrypt.
    TlsUnsupportedCipherSuite => "tls_unsupported_cipher_suite",
    /// A TLS record that did not decrypt (wrong key or damaged bytes).
    TlsRecordNotDecrypted => "tls_record_not_decrypted",
    /// Bytes that are not TLS records on a TLS connection.
    TlsNotTls => "tls_not_tls",
    /// A TLS connection whose handshake began before the capture.
    TlsHandshakeMissing => "tls_handshake_missing",
    /// A gap in a TLS record stream.
    TlsGap => "tls_gap",
    /// A TLS record cut by the end of its connection: its last bytes never came.
    TlsRecordCut => "tls_record_cut",
    /// A connection switched to another protocol (`101` to WebSocket, a `CONNECT` tunnel):
    /// what follows is not HTTP and is not read.
    ProtocolSwitched => "protocol_switched",
}

impl AnomalyKind {
    /// The kind a stable name stands for (a record file's).
    pub fn from_name(name: &str) -> Option<AnomalyKind> {
        AnomalyKind::ALL.iter().copied().find(|k| k.name() == name)
    }
}

// By their stable names, as the reports print them: record files stay readable when variants
// are added.
impl serde::Serialize for AnomalyKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for AnomalyKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        AnomalyKind::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown anomaly kind {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_snake_case() {
        let mut names: Vec<&str> = AnomalyKind::ALL.iter().map(|k| k.name()).collect();
        assert!(names.iter().all(|n| {
            n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), AnomalyKind::ALL.len());
    }

    #[test]
    fn kinds_round_trip_by_name() {
        for k in AnomalyKind::ALL {
            let json = serde_json::to_string(k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
            assert_eq!(serde_json::from_str::<AnomalyKind>(&json).unwrap(), *k);
        }
        assert!(serde_json::from_str::<AnomalyKind>("\"no_such_kind\"").is_err());
    }
}
