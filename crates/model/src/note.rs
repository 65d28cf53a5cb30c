//! Notes: a warning about one input (what reading it skipped, cut or could not keep, what its
//! format lacks) or a limit of the run (a cap reached, a comparison not made). Stages make them
//! as typed values, the kind with the numbers and names it needs; the sentence a person reads is
//! made by the report alone (`mcpf_report::note`), so that nothing downstream matches text and a
//! sentence is worded in one place.

/// One warning or limit: what happened, how often, where.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Note {
    pub kind: NoteKind,
    /// How many (frames, bytes, sessions, bodies, …): the number the sentence is about; 1 for a
    /// note about one thing.
    pub count: u64,
    /// Where, when the note is about one place: a byte offset, a HAR entry or a log line (the
    /// kind says which).
    pub at: Option<u64>,
    /// What the input or the system said, quoted as given: an I/O or parse error, the reason a
    /// record was skipped, a version string.
    pub detail: Option<String>,
}

impl Note {
    /// A note of `kind` about `count` things, at no one place.
    pub fn new(kind: NoteKind, count: u64) -> Note {
        Note {
            kind,
            count,
            at: None,
            detail: None,
        }
    }

    /// The note at `at` (a byte offset, an entry, a line).
    pub fn at(mut self, at: u64) -> Note {
        self.at = Some(at);
        self
    }

    /// The note with what the input or the system said.
    pub fn detail(mut self, detail: impl Into<String>) -> Note {
        self.detail = Some(detail.into());
        self
    }
}

/// What a note is about, with the numbers its sentence needs beyond `count` and `at`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum NoteKind {
    // Reading a capture (warnings of its input).
    /// Packets of a link type not decoded were skipped.
    LinkTypeUnsupported { link_type: i32 },
    /// `count` frames were cut by the snap length (the longest frame kept: `snaplen` bytes).
    FramesCutBySnaplen { snaplen: u64 },
    /// `count` pcap records claim more captured bytes than the file's snap length.
    RecordsOverSnaplen,
    /// `count` pcapng packets whose timestamp falls before 1970 or past 2262 (a wrong
    /// `if_tsoffset`, a broken writer): each read at the time of the packet before it.
    TimestampsOutOfRange,
    /// `count` records whose timestamp is more than `days` days from the record before them,
    /// kept (their lengths and the record after them hold); a lone one (the record after it
    /// goes on from the one before) is given the time of the record before it.
    RecordsWithTimeJumps { days: u64 },
    /// A corrupt stretch of `count` bytes at byte `at`, skipped to the next valid unit.
    CorruptStretch { unit: CorruptUnit },
    /// `count` corrupt stretches in all (`bytes` skipped), past the `listed` that have their own.
    CorruptStretches { bytes: u64, listed: u64 },
    /// The capture's last record (at byte `at`, `count` bytes) is incomplete.
    CaptureTruncated,
    /// A signal stopped the read at byte `at`, `count` bytes into a record.
    ReadStoppedBySignal,
    /// The capturing interface reported `count` dropped packets.
    InterfaceDrops,
    /// The connection table (`max` connections) was full: `count` evicted, `with_bytes` of them
    /// had carried bytes.
    ConnectionTableFull { max: u64, with_bytes: u64 },
    /// The out-of-order limits were reached `count` times.
    OutOfOrderLimits,
    /// `count` connections of this input are connections of another input captured again (the
    /// same 4-tuple and initial sequence numbers): read once.
    ConnectionsCapturedTwice,
    /// The gzip stream is cut or damaged at decompressed byte `at` (`detail`: the error).
    GzipCut,
    /// Reading failed at byte `at` (`detail`: the error).
    ReadFailed,
    /// A pcapng interface with an invalid `if_tsresol`.
    InvalidTsresol { interface: u64, tsresol: u8 },
    /// Reading stopped (`detail`: the error).
    ReadingStopped,
    /// `count` frames were unwrapped from `tunnel` (at any depth) and analysed by the addresses
    /// inside it.
    TunnelUnwrapped { tunnel: Tunnel },
    /// `count` frames were removed as duplicates: each one's IP packet was byte for byte that
    /// of one of the `window_frames` TCP frames before it, at most `window_micros` µs apart.
    DuplicatesRemoved {
        window_frames: u64,
        window_micros: u64,
    },

    // Reading a HAR file.
    /// HAR entry `at` skipped (`detail`: why).
    HarEntrySkipped,
    /// Reading stopped in `entry` at byte `at` (`detail`: the JSON error); `rest` bytes unread.
    HarReadingStopped { entry: u64, rest: u64 },
    /// A HAR version other than 1.x (`detail`: the version).
    HarVersion,
    /// `count` entries used HTTP/2 or HTTP/3.
    HarHttp2Entries,
    /// `count` `_eventSourceMessages` times fell outside their response.
    HarMessagesMoved,
    /// `count` strings of entry `at` were cut at `cap_mib` MiB (`detail`: the bytes dropped).
    HarStringsCut { cap_mib: u64 },
    /// `count` events left out of order: the reorder window of `window_mib` MiB was full.
    HarOutOfOrder { window_mib: u64 },
    /// `count` more warnings than were listed.
    MoreWarnings,

    // Reading an access log.
    /// Line `at` skipped (`detail`: why).
    LineSkipped,
    /// Line `at` of `count` bytes skipped, over the line cap of `cap_mib` MiB.
    LineTooLong { cap_mib: u64 },
    /// Reading stopped after line `at` (`detail`: the error).
    LogReadingStopped,
    /// `count` more malformed lines than were listed.
    MoreMalformedLines,

    /// What a HAR file or an access log cannot record.
    Lacks(SourceLack),

    // Limits of the run (`summary.limits`).
    /// Payload bytes could not be kept in a temporary file (`detail`: the error).
    PayloadsNotKept,
    /// `count` quiet sessions written to the spill file could not be read back.
    SessionsLost,
    /// `count` SSE events on `streams` streams came after their session held `max` events.
    SessionEventsUnheld { streams: u64, max: u64 },
    /// `count` exchanges came after their session (one of `sessions`) held `max` exchanges.
    SessionExchangesUnheld { sessions: u64, max: u64 },
    /// `count` event IDs came while the index of the open sessions' IDs was full.
    EventIdsNotIndexed,
    /// TLS: `count` of `connections` decrypted; the rest by reason (the reason's sentence, as
    /// the TLS stage words its anomaly, with how many).
    Tls {
        connections: u64,
        not_decrypted: Vec<(String, u64)>,
    },
    /// Reading was stopped by a signal.
    StoppedBySignal,
    /// A record file (`path`) could not be read past line `at`: damaged (`detail` says how) or
    /// cut short (no end line). The report is of the records before it.
    RecordsDamaged { path: String },
    /// `count` TCP connections of one record file were open at once with a connection of
    /// another on the same 4-tuple: perhaps one link captured at two points, whose copies a run
    /// over the captures themselves reads once.
    RecordsShareConnections,
    /// `count` TLS connections were inside a record when the capture ended: `bytes` of those
    /// records were still to come, and what came of them could not be authenticated.
    TlsRecordsCutByCaptureEnd { bytes: u64 },
    /// `count` servers minted session IDs after `max` had been remembered.
    MintingServersNotKept { max: u64 },
    /// `count` compressed bodies decoded only up to the decoding budget.
    BodiesPastDecodingBudget,
    /// `count` brotli bodies not decoded: a shard's windows (`shard_mib` MiB, `total_mib` over
    /// all) were held.
    BrotliBodiesRefused { shard_mib: u64, total_mib: u64 },
    /// `count` messages kept shorter than their own caps: a shard's bytes (`shard_mib` MiB,
    /// `total_mib` over all) were held.
    MessagesCutByHeld { shard_mib: u64, total_mib: u64 },
    /// `count` header fields past the first 128 of a head were dropped.
    HeaderFieldsDropped,
    /// `count` HTTP/2 header fields were dropped past the decoded bytes a header block keeps
    /// (`block_kib` KiB, `least_kib` once a direction of a connection kept `conn_mib` MiB).
    HeaderBytesDropped {
        block_kib: u64,
        least_kib: u64,
        conn_mib: u64,
    },
    /// `count` compressed bodies stopped at the budget of their connection's decoded bytes
    /// (`floor_mib` MiB, then `ratio` per compressed byte).
    BodiesPastConnectionBudget { floor_mib: u64, ratio: u64 },
    /// `count` event streams were not read past a packet that yielded more than `max` events.
    SseStreamsCutInPacket { max: u64 },
    /// `count` JSON bodies over 16 MiB were kept with their strings cut.
    JsonBodiesShrunk,
    /// `count` bodies of media types that cannot carry MCP were kept to their first
    /// `window_kib` KiB, the rest counted.
    OtherTypeBodiesCut { window_kib: u64 },
    /// `count` connections set aside as not MCP showed a sign of MCP later, after bytes not
    /// kept (past the `window_kib` KiB of each direction, a first request's body, a gap):
    /// examined from the first request line nothing let go had answered, `lost_bytes` before
    /// it not examined.
    SetAsideResumed { window_kib: u64, lost_bytes: u64 },
    /// `count` connections were set aside without a window of their last bytes (the windows
    /// held `max_mib` MiB together): resumed, they are examined from that moment on.
    SetAsideWithoutWindow { max_mib: u64 },
    /// `count` connections were examined whole, not classified, because `max` servers were
    /// already remembered as carrying MCP.
    ClassificationServersFull { max: u64 },
    /// `count` connections were examined whole, not classified, because the first requests
    /// arriving in pieces already held `max_mib` MiB together.
    ClassificationSniffFull { max_mib: u64 },
    /// `count` sessions not compared with their observations in other inputs (`held_mib` MiB
    /// held already, or more than `per_input` observations of one ID in one input).
    ObservationsNotCompared { held_mib: u64, per_input: u64 },
    /// `count` sessions reported before their observations in other inputs ended (`max_events`
    /// events held waiting).
    ReleasedEarly { max_events: u64 },
}

/// A tunnel or label stack a captured frame was carried in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Tunnel {
    /// VXLAN (RFC 7348) on this UDP destination port.
    Vxlan { udp_port: u16 },
    /// Geneve (RFC 8926) on this UDP destination port.
    Geneve { udp_port: u16 },
    /// GRE carrying IP or MPLS (RFC 2784, RFC 2890).
    Gre,
    /// GRE carrying Ethernet frames (transparent Ethernet bridging, protocol 0x6558).
    GreEthernet,
    /// ERSPAN type I: GRE protocol 0x88BE with no ERSPAN header.
    ErspanI,
    /// ERSPAN type II: an 8-byte ERSPAN header (version 1).
    ErspanII,
    /// ERSPAN type III: a 12-byte ERSPAN header (version 2), and an 8-byte platform subheader
    /// when its O bit is set.
    ErspanIII,
    /// IPv4 inside IP (IP protocol 4).
    IpInIp,
    /// IPv6 inside IP (IP protocol 41: 6in4, or IPv6 in IPv6).
    Ipv6InIp,
    /// An MPLS label stack (ethertype 0x8847 or 0x8848).
    Mpls,
}

/// What a corrupt stretch of a capture was read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CorruptUnit {
    PcapRecord,
    PcapngBlock,
    /// A pcapng block whose framing is sound but whose body does not parse.
    PcapngBlockBody,
    ObsoletePacketBlock,
}

/// What a HAR file or an access log does not record, so that findings resting on it are not
/// raised (and the report says why).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SourceLack {
    // HAR files.
    /// TCP-level evidence: a HAR records HTTP messages only.
    HarTcp,
    /// Client addresses and ports.
    HarClientAddresses,
    /// Which exchanges shared a connection (no `connection` field).
    HarConnections,
    /// `unknown` of `total` request bodies were not stored.
    RequestBodies { unknown: u64, total: u64 },
    /// The response of `entries` entries (the first of them listed) is not recorded.
    HarResponses { entries: u64, listed: Vec<u64> },
    /// `count` response bodies were not stored.
    HarResponseBodies { count: u64 },
    /// The SSE events of `unknown` of `total` event streams (`stored_empty`: some were stored
    /// empty rather than not at all).
    HarSseEvents {
        unknown: u64,
        total: u64,
        stored_empty: bool,
    },
    /// The time of each SSE event.
    HarSseTimes,
    /// Authorization, Cookie and Set-Cookie headers (`sanitized`: a browser's sanitized export).
    HarCredentials { sanitized: bool },
    /// Server IP addresses of some entries.
    HarServerAddresses,

    // Access logs.
    /// Request and response bodies.
    LogBodies,
    /// The SSE events of `streams` responses that are or may be event streams.
    LogSseEvents { streams: u64 },
    /// Every header but the logged ones.
    LogHeaders {
        requests: Vec<String>,
        responses: Vec<String>,
    },
    /// Headers MCP analysis needs that the log does not carry.
    LogMcpHeaders { missing: Vec<McpHeader> },
    /// When each response began (`measured`: estimated from the upstream's header time).
    LogResponseStart { measured: bool },
    /// When requests began.
    LogRequestStart { durations: Durations },
    /// When `records` requests ended: the log gave no duration, so each end is its start.
    LogDurationsMissing { records: u64 },
    /// When `records` requests ended: derived from timers that are not the exchange's own
    /// duration, as `how` says.
    LogDurationsEstimated { records: u64, how: DurationEstimate },
    /// Sub-second times.
    LogCoarseTimes,
    /// How responses ended.
    LogResponseEnd,
    /// Client addresses and ports.
    LogClientAddresses,
    /// Which requests shared a connection.
    LogConnections,
    /// TCP-level evidence: an access log has one line per request.
    LogTcp,
}

/// A header MCP analysis reads, on the side it is read on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum McpHeader {
    SessionIdOnRequests,
    SessionIdOnResponses,
    LastEventIdOnRequests,
    AcceptOnRequests,
    ContentTypeOnResponses,
}

/// How an access log's end of an exchange was derived when no timer measures it exactly.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum DurationEstimate {
    /// HAProxy `%Tt` from the request's start (`%tr`): it also counts the handshake and the
    /// connection's idle time before the request, so the end may be late by them.
    TotalIncludesIdle,
    /// HAProxy `%Ta` from the connection's accept (`%Ts`, no `%tr`): start and end may both be
    /// early by the idle time before the request.
    ActiveFromAccept,
    /// nginx `$upstream_response_time` (no `$request_time`): the upstream's time only, so the
    /// end may be early by the time spent reading the request and sending the last bytes.
    UpstreamOnly,
    /// Envoy `%RESPONSE_DURATION%` plus `%RESPONSE_TX_DURATION%` (no `%DURATION%`).
    EnvoyPhases,
}

/// Which lines of an access log carry a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Durations {
    All,
    Some,
    None,
}
