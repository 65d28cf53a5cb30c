//! The sentences of notes: every warning of an input and every limit of a run is worded here,
//! and only here, from the typed [`Note`] a stage made. Every output (the JSON `warnings` and
//! `summary.limits`, the terminal report, the warnings on standard error) prints these words, so
//! they are kept byte for byte as they were when stages wrote them; a finding kind a sentence
//! names is written by its registry name, never as a literal.

use std::fmt::{self, Display, Formatter};

use mcpf_detect::FindingKind;
use mcpf_model::{
    CorruptUnit, DurationEstimate, Durations, InputReport, McpHeader, Note, NoteKind, SourceLack,
    Tunnel,
};
use serde::Serialize;

/// The sentence of `note`, as every output prints it.
pub fn sentence(note: &Note) -> String {
    Sentence(note).to_string()
}

/// A note's sentence, written where it is displayed.
pub struct Sentence<'a>(pub &'a Note);

impl Display for Sentence<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_note(f, self.0)
    }
}

/// A note's sentence, the number, the place and the detail slotted in: one arm per kind (a
/// table rather than logic), so that a kind added to the model is a compile error here until it
/// is worded.
fn write_note(f: &mut Formatter<'_>, n: &Note) -> fmt::Result {
    let (c, at, d) = (
        n.count,
        n.at.unwrap_or(0),
        n.detail.as_deref().unwrap_or(""),
    );
    match &n.kind {
        NoteKind::LinkTypeUnsupported { link_type } => write!(
            f,
            "link type {link_type} is not supported: its packets were skipped"
        ),
        NoteKind::FramesCutBySnaplen { snaplen } => write!(
            f,
            "{c} frames were cut by the capture's snap length ({snaplen} bytes): their missing bytes are reported as gaps (capture with -s 0)"
        ),
        NoteKind::TimestampsOutOfRange => write!(
            f,
            "{c} packets have a timestamp before 1970 or past 2262 (a wrong if_tsoffset or a broken writer); each was read at the time of the packet before it"
        ),
        NoteKind::RecordsWithTimeJumps { days } => write!(
            f,
            "{c} records have a timestamp more than {days} days from the records around them; they were read, each lone one at the time of the record before it (a clock that stepped for good is followed)"
        ),
        NoteKind::RecordsOverSnaplen => write!(
            f,
            "{c} records claim more captured bytes than the file's snap length; they were read as they are"
        ),
        NoteKind::CorruptStretch { unit } => write!(
            f,
            "corrupt {} at byte {at}: {c} bytes skipped to the next valid one",
            unit_name(*unit)
        ),
        NoteKind::CorruptStretches { bytes, listed } => write!(
            f,
            "{c} corrupt stretches in all ({bytes} bytes skipped); only the first {listed} are listed"
        ),
        NoteKind::CaptureTruncated => write!(
            f,
            "the capture is truncated: its last record (at byte {at}, {c} bytes) is incomplete and was ignored"
        ),
        NoteKind::ReadStoppedBySignal => write!(
            f,
            "a signal stopped the read at byte {at}, {c} bytes into a record that was not read"
        ),
        NoteKind::InterfaceDrops => {
            write!(f, "the capturing interface reported {c} dropped packets")
        }
        NoteKind::ConnectionTableFull { max, with_bytes } => write!(
            f,
            "the connection table was full ({max} connections): {c} connections were evicted ({with_bytes} of them had carried bytes, whose open messages are cut)"
        ),
        NoteKind::ConnectionsCapturedTwice => write!(
            f,
            "{c} connections are connections of another input captured again (the same 4-tuple and initial sequence numbers: the same link captured twice): their packets were read once"
        ),
        NoteKind::OutOfOrderLimits => write!(
            f,
            "the out-of-order limits (pieces or bytes) were reached {c} times: holes were declared lost early and reported as gaps"
        ),
        NoteKind::GzipCut => write!(
            f,
            "the gzip stream is cut or damaged at decompressed byte {at} ({d}): the frames before it were analysed"
        ),
        NoteKind::ReadFailed => write!(
            f,
            "reading failed at byte {at} ({d}): the frames before it were analysed"
        ),
        NoteKind::InvalidTsresol { interface, tsresol } => write!(
            f,
            "interface {interface} has an invalid if_tsresol {tsresol:#x}; its timestamps are read as microseconds"
        ),
        NoteKind::ReadingStopped => write!(f, "reading stopped: {d}"),
        NoteKind::TunnelUnwrapped { tunnel } => write!(
            f,
            "{c} {} unwrapped from {}: analysed by the addresses inside the tunnel",
            if c == 1 { "frame was" } else { "frames were" },
            tunnel_name(*tunnel)
        ),
        NoteKind::DuplicatesRemoved {
            window_frames,
            window_micros,
        } => write!(
            f,
            "{c} duplicate frame{} removed (SPAN copies, or one packet seen on two interfaces): each held the same IP packet, byte for byte with its IP ID and TTL, as one of the {window_frames} TCP frames before it, at most {} apart (--keep-duplicates keeps them)",
            if c == 1 { "" } else { "s" },
            micros(*window_micros)
        ),
        NoteKind::HarEntrySkipped => write!(f, "entry {at} skipped: {d}"),
        NoteKind::HarReadingStopped { entry, rest } => write!(
            f,
            "reading stopped in entry {entry} at byte {at} ({d}): the rest of the file ({rest} bytes) was not read"
        ),
        NoteKind::HarVersion => write!(f, "HAR version {d:?}: read as HAR 1.2"),
        NoteKind::HarHttp2Entries => write!(
            f,
            "{c} entries used HTTP/2 or HTTP/3: read with HTTP/1.1 semantics (pseudo-headers dropped)"
        ),
        NoteKind::HarStringsCut { cap_mib } => write!(
            f,
            "{c} strings of an entry were cut at {cap_mib} MiB (their bodies are reported cut, so nothing is concluded from what they seem to lack)"
        ),
        NoteKind::HarMessagesMoved => write!(
            f,
            "{c} _eventSourceMessages times fell outside their response (first byte to end) and were moved into it"
        ),
        NoteKind::HarOutOfOrder { window_mib } => write!(
            f,
            "entries far out of start order: {c} events were emitted after later ones (the reorder window of {window_mib} MiB was full)"
        ),
        NoteKind::MoreWarnings => write!(f, "... and {c} more warnings"),
        NoteKind::LineSkipped => write!(f, "line {at} skipped: {d}"),
        NoteKind::LineTooLong { cap_mib } => write!(
            f,
            "line {at} skipped: {c} bytes, over the {cap_mib} MiB line cap"
        ),
        NoteKind::LogReadingStopped => write!(f, "reading stopped after line {at}: {d}"),
        NoteKind::MoreMalformedLines => write!(f, "... and {c} more malformed lines"),
        NoteKind::PayloadsNotKept => {
            write!(f, "cannot keep payload bytes in a temporary file: {d}")
        }
        NoteKind::SessionsLost => write!(
            f,
            "{c} quiet sessions written to the spill file could not be read back"
        ),
        NoteKind::EventIdsNotIndexed => write!(
            f,
            "{c} event IDs arrived while the index of the open sessions' IDs was full: {} may be missed for the resumes that replayed them",
            FindingKind::CrossSessionReplay.name()
        ),
        NoteKind::TlsRecordsCutByCaptureEnd { bytes } => write!(
            f,
            "{c} TLS connections were inside a record when the capture ended ({bytes} bytes of it still to come): what came of those records is not decrypted, and their exchanges are open at the capture's end"
        ),
        NoteKind::RecordsDamaged { path } => write!(
            f,
            "the record file {path} could not be read past line {at} ({d}): what follows it is not in the report"
        ),
        NoteKind::RecordsShareConnections => write!(
            f,
            "{c} TCP connections of one record file were open at the same time as a connection of another on the same addresses and ports: if they are one link captured twice, their exchanges are counted twice here (extract those captures in one run, which reads the copies once)"
        ),
        NoteKind::StoppedBySignal => f.write_str(
            "reading was stopped by a signal (SIGINT, SIGTERM or SIGHUP): the report is of what was read until then, and requests still open then are pending, not unanswered",
        ),
        NoteKind::MintingServersNotKept { max } => write!(
            f,
            "{c} servers minted session IDs after {max} had been remembered: requests to them without one are not judged ({} session_header_missing_not_400)",
            FindingKind::StatusCodeViolation.name()
        ),
        NoteKind::ObservationsNotCompared {
            held_mib,
            per_input,
        } => write!(
            f,
            "{c} sessions were not compared with their observations in other inputs: {held_mib} MiB of them held already, or more than {per_input} observations of one session ID in one input ({} is not determinable for them)",
            FindingKind::LostInTransit.name()
        ),
        NoteKind::BodiesPastDecodingBudget => write!(
            f,
            "{c} compressed bodies were decoded only up to the decoding budget (1 MiB, then 1024 bytes per compressed byte, at most 24 MiB saved): a decompression bomb, or a body too large to decode whole"
        ),
        NoteKind::BrotliBodiesRefused {
            shard_mib,
            total_mib,
        } => write!(
            f,
            "{c} brotli bodies were not decoded: the bodies in progress on their shard (an eighth of the connections) already held the {shard_mib} MiB of decoding windows a shard may hold ({total_mib} MiB over all)"
        ),
        NoteKind::MessagesCutByHeld {
            shard_mib,
            total_mib,
        } => write!(
            f,
            "{c} messages were kept shorter than their own caps: the messages in progress on their shard (an eighth of the connections) held the {shard_mib} MiB of bodies and events a shard may hold ({total_mib} MiB over all)"
        ),
        NoteKind::HeaderFieldsDropped => write!(
            f,
            "{c} header fields past the first 128 of a head were dropped (the fields that frame a message or name its session are kept)"
        ),
        NoteKind::HeaderBytesDropped {
            block_kib,
            least_kib,
            conn_mib,
        } => write!(
            f,
            "{c} HTTP/2 header fields were dropped past the {block_kib} KiB of decoded names and values a header block keeps ({least_kib} KiB once a direction of its connection kept {conn_mib} MiB), or repeated a pseudo-header"
        ),
        NoteKind::BodiesPastConnectionBudget { floor_mib, ratio } => write!(
            f,
            "{c} compressed bodies were decoded only up to their connection's decoding budget ({floor_mib} MiB, then {ratio} bytes per compressed byte): a decompression bomb, or bodies too large to decode whole"
        ),
        NoteKind::SseStreamsCutInPacket { max } => write!(
            f,
            "{c} event streams were not read past a packet that yielded more than {max} SSE events (their content is not all known, so nothing is concluded from what it seems to lack)"
        ),
        NoteKind::JsonBodiesShrunk => write!(
            f,
            "{c} JSON bodies over 16 MiB were kept with their strings cut to 64 KiB"
        ),
        NoteKind::OtherTypeBodiesCut { window_kib } => write!(
            f,
            "{c} bodies of media types that cannot carry MCP (not JSON, an event stream or text) were kept to their first {window_kib} KiB, the rest counted, not copied"
        ),
        NoteKind::SetAsideResumed {
            window_kib,
            lost_bytes,
        } => write!(
            f,
            "{c} connections set aside as not MCP by their first bytes showed a sign of MCP after bytes that were not kept (more than the {window_kib} KiB kept of each direction, a first request's body, or bytes the capture lost): examined from the first request line that nothing let go had answered; {lost_bytes} bytes before it were not examined (what they carried is not in the report)"
        ),
        NoteKind::SetAsideWithoutWindow { max_mib } => write!(
            f,
            "{c} connections set aside as not MCP kept no window of their last bytes (the windows held {max_mib} MiB together): resumed, they were examined from that moment on"
        ),
        NoteKind::ClassificationSniffFull { max_mib } => write!(
            f,
            "{c} connections were examined whole instead of classified: the first requests arriving in pieces already held {max_mib} MiB together"
        ),
        NoteKind::ClassificationServersFull { max } => write!(
            f,
            "{c} connections were examined whole instead of classified: {max} servers were already remembered as carrying MCP"
        ),
        // Worded by their own functions.
        NoteKind::Lacks(lack) => {
            f.write_str("lacks ")?;
            write_lack(f, lack)
        }
        NoteKind::Tls {
            connections,
            not_decrypted,
        } => write_tls(f, c, *connections, not_decrypted),
        NoteKind::SessionEventsUnheld { streams, max } => {
            write_events_unheld(f, c, *streams, *max)
        }
        NoteKind::SessionExchangesUnheld { sessions, max } => {
            write_exchanges_unheld(f, c, *sessions, *max)
        }
        NoteKind::ReleasedEarly { max_events } => write_released_early(f, c, *max_events),
    }
}

/// `TLS: 6 of 7 connections decrypted with the key log; not decrypted: 1 (cipher suite 0xC009 …)`,
/// the reasons in the order of their words.
fn write_tls(
    f: &mut Formatter<'_>,
    decrypted: u64,
    connections: u64,
    not_decrypted: &[(String, u64)],
) -> fmt::Result {
    write!(
        f,
        "TLS: {decrypted} of {connections} connections decrypted with the key log"
    )?;
    if not_decrypted.is_empty() {
        return Ok(());
    }
    let mut why: Vec<&(String, u64)> = not_decrypted.iter().collect();
    why.sort();
    let why: Vec<String> = why.iter().map(|(r, n)| format!("{n} ({r})")).collect();
    write!(f, "; not decrypted: {}", why.join(", "))
}

/// The kinds that conclude from an event's (or an answer's) absence, as the registry says.
fn absence_kinds() -> String {
    let kinds: Vec<&str> = mcpf_detect::requiring(mcpf_mcp::model::Need::EveryEvent)
        .map(FindingKind::name)
        .collect();
    crate::table::and_list(&kinds)
}

fn write_events_unheld(f: &mut Formatter<'_>, c: u64, streams: u64, max: u64) -> fmt::Result {
    write!(
        f,
        "{c} SSE events on {streams} stream{} arrived after their session held {max} (--max-session-events): counted, not kept; {} are not determinable for those sessions",
        if streams == 1 { "" } else { "s" },
        absence_kinds()
    )
}

fn write_exchanges_unheld(f: &mut Formatter<'_>, c: u64, sessions: u64, max: u64) -> fmt::Result {
    write!(
        f,
        "{c} exchanges of {sessions} session{} came after their session held {max} (--max-session-exchanges): counted, not kept, with their events; {} are not determinable for those sessions",
        if sessions == 1 { "" } else { "s" },
        absence_kinds()
    )
}

fn write_released_early(f: &mut Formatter<'_>, c: u64, max_events: u64) -> fmt::Result {
    let (sessions, their) = match c {
        1 => ("1 session was".to_string(), "its"),
        n => (format!("{n} sessions were"), "their"),
    };
    write!(
        f,
        "{sessions} reported before {their} observations in other inputs ended ({max_events} events held waiting, --max-held-events): their hop comparison was made with what was kept of them, and its findings went to the later observation; findings that need every observation at once ({} across replicas) may be missed for them",
        FindingKind::SessionNotFound.name()
    )
}

/// What a corrupt stretch was read as.
fn unit_name(unit: CorruptUnit) -> &'static str {
    match unit {
        CorruptUnit::PcapRecord => "pcap record",
        CorruptUnit::PcapngBlock => "pcapng block",
        CorruptUnit::PcapngBlockBody => "pcapng block whose body does not parse",
        CorruptUnit::ObsoletePacketBlock => "obsolete pcapng packet block",
    }
}

/// What a HAR file or an access log lacks, after `lacks `: one arm per lack.
fn write_lack(f: &mut Formatter<'_>, lack: &SourceLack) -> fmt::Result {
    match lack {
        SourceLack::HarTcp => f.write_str(
            "TCP-level evidence (packets, retransmissions, gaps, resets): a HAR records HTTP messages only",
        ),
        SourceLack::HarClientAddresses => f.write_str(
            "client addresses and ports: a HAR records only the server's IP address",
        ),
        SourceLack::HarConnections => f.write_str(
            "which exchanges shared a TCP connection (no \"connection\" field): each entry is counted as its own connection",
        ),
        SourceLack::RequestBodies { unknown, total } => write!(
            f,
            "{unknown} of {total} request bodies (not stored by the exporter): the JSON-RPC messages they carried are unknown"
        ),
        SourceLack::HarResponses { entries, listed } => write_har_responses(f, *entries, listed),
        SourceLack::HarResponseBodies { count } => write!(
            f,
            "{count} response bodies (not stored or removed by the exporter): the JSON-RPC messages they carried are unknown"
        ),
        SourceLack::HarSseEvents {
            unknown,
            total,
            stored_empty,
        } => write_har_sse_events(f, *unknown, *total, *stored_empty),
        SourceLack::HarSseTimes => f.write_str(
            "the time of each SSE event: a HAR keeps none, so event times are spread between the response's first byte and its end (estimated)",
        ),
        SourceLack::HarCredentials { sanitized } => write!(
            f,
            "Authorization, Cookie and Set-Cookie headers: none in the whole file, so {}; treated as unknown, not absent",
            if *sanitized {
                "the browser exported it sanitized (its default)"
            } else {
                "they were stripped by the exporter or never sent"
            }
        ),
        SourceLack::HarServerAddresses => {
            f.write_str("server IP addresses of some entries (no serverIPAddress)")
        }
        SourceLack::LogBodies => f.write_str(
            "request and response bodies: an access log keeps no content, so no JSON-RPC messages and no SSE events; replays, skipped event ranges and duplicate events are not determinable (the event-ID scheme can still be inferred from logged Last-Event-ID values)",
        ),
        SourceLack::LogSseEvents { streams } => write!(
            f,
            "the SSE events of {streams} responses that are or may be event streams"
        ),
        SourceLack::LogHeaders {
            requests,
            responses,
        } => write!(
            f,
            "every header except the logged ones (requests: {}; responses: {})",
            names_or_none(requests),
            names_or_none(responses)
        ),
        SourceLack::LogMcpHeaders { missing } => {
            let missing: Vec<&str> = missing.iter().map(|h| mcp_header(*h)).collect();
            write!(
                f,
                "headers MCP analysis needs that this log does not carry: {}",
                missing.join("; ")
            )
        }
        SourceLack::LogResponseStart { measured: true } => {
            f.write_str("when each response began: estimated from the upstream's header time")
        }
        SourceLack::LogResponseStart { measured: false } => {
            f.write_str("when each response began: taken as the request's start (estimated)")
        }
        SourceLack::LogRequestStart { durations } => f.write_str(request_start(*durations)),
        SourceLack::LogDurationsMissing { records } => write!(
            f,
            "when {} ended: no duration on the line, so each end is taken as its start",
            count(*records, "request", "requests")
        ),
        SourceLack::LogDurationsEstimated { records, how } => write!(
            f,
            "when {} ended exactly: {}",
            count(*records, "request", "requests"),
            duration_estimate(*how)
        ),
        SourceLack::LogCoarseTimes => {
            f.write_str("sub-second times: the time field has whole seconds (log $msec)")
        }
        SourceLack::LogResponseEnd => f.write_str(
            "how responses ended: a stream the client dropped looks complete unless the status says otherwise (499, 0); log nginx $request_completion or Envoy %RESPONSE_FLAGS% to know",
        ),
        SourceLack::LogClientAddresses => {
            f.write_str("client addresses and ports of some or all requests")
        }
        SourceLack::LogConnections => {
            f.write_str("which requests shared a TCP connection (no connection id logged)")
        }
        SourceLack::LogTcp => f.write_str(
            "TCP-level evidence (packets, retransmissions, gaps, resets): an access log has one line per request",
        ),
    }
}

fn write_har_responses(f: &mut Formatter<'_>, entries: u64, listed: &[u64]) -> fmt::Result {
    let more = entries.saturating_sub(listed.len() as u64);
    let list: Vec<String> = listed.iter().map(u64::to_string).collect();
    let (count, word) = match entries {
        1 => ("1 entry".to_string(), "entry"),
        n => (format!("{n} entries"), "entries"),
    };
    write!(
        f,
        "the response of {count} (no response object or status 0, and no _error: {word} {}{}): unknown, never taken as unanswered",
        list.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

fn write_har_sse_events(
    f: &mut Formatter<'_>,
    unknown: u64,
    total: u64,
    stored_empty: bool,
) -> fmt::Result {
    let why = if stored_empty {
        " (stored empty: exporters such as mitmproxy without a recording addon, or a browser for fetch-based SSE, keep nothing of a streamed body)"
    } else {
        " (not stored by the exporter)"
    };
    write!(
        f,
        "the SSE events of {unknown} of {total} event streams{why}: replays, skipped ranges and duplicate events on them are not determinable"
    )
}

fn names_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// A header MCP analysis needs, and what is lost without it.
fn mcp_header(h: McpHeader) -> &'static str {
    match h {
        McpHeader::SessionIdOnRequests => "Mcp-Session-Id on requests (sessions cannot be rebuilt)",
        McpHeader::SessionIdOnResponses => {
            "Mcp-Session-Id on responses (session assignment and changes)"
        }
        McpHeader::LastEventIdOnRequests => "Last-Event-ID on requests (resume attempts)",
        McpHeader::AcceptOnRequests => "Accept on requests (which streams the client asked for)",
        McpHeader::ContentTypeOnResponses => {
            "Content-Type on responses (which responses were SSE streams)"
        }
    }
}

fn tunnel_name(tunnel: Tunnel) -> String {
    match tunnel {
        Tunnel::Vxlan { udp_port } => format!("VXLAN (UDP port {udp_port})"),
        Tunnel::Geneve { udp_port } => format!("Geneve (UDP port {udp_port})"),
        Tunnel::Gre => "GRE".into(),
        Tunnel::GreEthernet => "GRE (transparent Ethernet bridging)".into(),
        Tunnel::ErspanI => "ERSPAN type I".into(),
        Tunnel::ErspanII => "ERSPAN type II".into(),
        Tunnel::ErspanIII => "ERSPAN type III".into(),
        Tunnel::IpInIp => "IP in IP (IPv4 inside, protocol 4)".into(),
        Tunnel::Ipv6InIp => "IPv6 in IP (protocol 41: 6in4 or IPv6 in IPv6)".into(),
        Tunnel::Mpls => "MPLS label stacks".into(),
    }
}

/// A duration given in microseconds, in milliseconds when it is a whole number of them.
fn micros(n: u64) -> String {
    if n >= 1000 && n.is_multiple_of(1000) {
        format!("{} ms", n / 1000)
    } else {
        format!("{n} µs")
    }
}

fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn duration_estimate(how: DurationEstimate) -> &'static str {
    match how {
        DurationEstimate::TotalIncludesIdle => {
            "estimated from HAProxy's total time (%Tt), which also counts the handshake and the connection's idle time before the request, so an end may be late by them (log %Ta)"
        }
        DurationEstimate::ActiveFromAccept => {
            "estimated from HAProxy's active time (%Ta) counted from the connection's accept (no %tr logged), so start and end may be early by the idle time before the request"
        }
        DurationEstimate::UpstreamOnly => {
            "estimated from nginx's $upstream_response_time (no $request_time), so an end may be early by the time spent reading the request and sending the last bytes"
        }
        DurationEstimate::EnvoyPhases => {
            "estimated from Envoy's %RESPONSE_DURATION% plus %RESPONSE_TX_DURATION% (no %DURATION%)"
        }
    }
}

fn request_start(durations: Durations) -> &'static str {
    match durations {
        Durations::All => {
            "when each request began: the log is written at the end, so start = end − duration"
        }
        Durations::Some => {
            "when some requests began (no duration on their line): their start is taken as their end"
        }
        Durations::None => {
            "when requests began (no duration field): each start is taken as its end"
        }
    }
}

/// An input's entry in every JSON output (`inputs[]`, the NDJSON `input` record, the `http` and
/// `flows` views): its fields in their documented order, its warnings as sentences.
#[derive(Serialize)]
pub struct InputJson<'a> {
    index: u32,
    path: &'a str,
    format: mcpf_model::FileFormat,
    /// What its record numbers (`frames` everywhere) count: `frame`, `entry` or `line`.
    unit: &'static str,
    packets: u64,
    bytes: u64,
    skipped: &'a std::collections::BTreeMap<String, u64>,
    warnings: Vec<String>,
    accounting: &'a mcpf_model::Accounting,
    error: &'a Option<String>,
    read_as: &'a std::collections::BTreeMap<String, String>,
}

impl<'a> InputJson<'a> {
    pub fn new(input: &'a InputReport) -> Self {
        InputJson {
            index: input.index,
            path: &input.path,
            format: input.format,
            unit: input.format.unit().word(false),
            packets: input.packets,
            bytes: input.bytes,
            skipped: &input.skipped,
            warnings: input.warnings.iter().map(sentence).collect(),
            accounting: &input.accounting,
            error: &input.error,
            read_as: &input.read_as,
        }
    }

    /// Every input's entry.
    pub fn all(inputs: &'a [InputReport]) -> Vec<InputJson<'a>> {
        inputs.iter().map(InputJson::new).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(kind: NoteKind, count: u64) -> Note {
        Note::new(kind, count)
    }

    /// Every kind beside the sentence the stages wrote before they typed it: what every output
    /// prints must not change by a byte.
    #[test]
    fn every_warning_reads_as_before() {
        use NoteKind as K;
        let cases: Vec<(Note, &str)> = vec![
            (
                note(K::LinkTypeUnsupported { link_type: 147 }, 1),
                "link type 147 is not supported: its packets were skipped",
            ),
            (
                note(K::FramesCutBySnaplen { snaplen: 128 }, 25),
                "25 frames were cut by the capture's snap length (128 bytes): their missing bytes are reported as gaps (capture with -s 0)",
            ),
            (
                note(K::RecordsOverSnaplen, 3),
                "3 records claim more captured bytes than the file's snap length; they were read as they are",
            ),
            (
                note(
                    K::CorruptStretch {
                        unit: CorruptUnit::PcapRecord,
                    },
                    5600,
                )
                .at(2061),
                "corrupt pcap record at byte 2061: 5600 bytes skipped to the next valid one",
            ),
            (
                note(
                    K::CorruptStretch {
                        unit: CorruptUnit::PcapngBlockBody,
                    },
                    40,
                )
                .at(8),
                "corrupt pcapng block whose body does not parse at byte 8: 40 bytes skipped to the next valid one",
            ),
            (
                note(
                    K::CorruptStretch {
                        unit: CorruptUnit::ObsoletePacketBlock,
                    },
                    40,
                )
                .at(8),
                "corrupt obsolete pcapng packet block at byte 8: 40 bytes skipped to the next valid one",
            ),
            (
                note(
                    K::CorruptStretches {
                        bytes: 195,
                        listed: 10,
                    },
                    39,
                ),
                "39 corrupt stretches in all (195 bytes skipped); only the first 10 are listed",
            ),
            (
                note(K::CaptureTruncated, 45).at(8131),
                "the capture is truncated: its last record (at byte 8131, 45 bytes) is incomplete and was ignored",
            ),
            (
                note(K::ReadStoppedBySignal, 57).at(50320367),
                "a signal stopped the read at byte 50320367, 57 bytes into a record that was not read",
            ),
            (
                note(K::InterfaceDrops, 7),
                "the capturing interface reported 7 dropped packets",
            ),
            (
                note(
                    K::ConnectionTableFull {
                        max: 2,
                        with_bytes: 329,
                    },
                    485,
                ),
                "the connection table was full (2 connections): 485 connections were evicted (329 of them had carried bytes, whose open messages are cut)",
            ),
            (
                note(K::OutOfOrderLimits, 4),
                "the out-of-order limits (pieces or bytes) were reached 4 times: holes were declared lost early and reported as gaps",
            ),
            (
                note(K::GzipCut, 1)
                    .at(13278)
                    .detail("incomplete deflate stream"),
                "the gzip stream is cut or damaged at decompressed byte 13278 (incomplete deflate stream): the frames before it were analysed",
            ),
            (
                note(K::ReadFailed, 1).at(9).detail("boom"),
                "reading failed at byte 9 (boom): the frames before it were analysed",
            ),
            (
                note(
                    K::InvalidTsresol {
                        interface: 1,
                        tsresol: 0x7f,
                    },
                    1,
                ),
                "interface 1 has an invalid if_tsresol 0x7f; its timestamps are read as microseconds",
            ),
            (
                note(K::ReadingStopped, 1).detail("boom"),
                "reading stopped: boom",
            ),
            (
                note(
                    K::TunnelUnwrapped {
                        tunnel: Tunnel::Vxlan { udp_port: 4789 },
                    },
                    162,
                ),
                "162 frames were unwrapped from VXLAN (UDP port 4789): analysed by the addresses inside the tunnel",
            ),
            (
                note(
                    K::TunnelUnwrapped {
                        tunnel: Tunnel::ErspanIII,
                    },
                    1,
                ),
                "1 frame was unwrapped from ERSPAN type III: analysed by the addresses inside the tunnel",
            ),
            (
                note(
                    K::DuplicatesRemoved {
                        window_frames: 4,
                        window_micros: 1000,
                    },
                    162,
                ),
                "162 duplicate frames removed (SPAN copies, or one packet seen on two interfaces): each held the same IP packet, byte for byte with its IP ID and TTL, as one of the 4 TCP frames before it, at most 1 ms apart (--keep-duplicates keeps them)",
            ),
            (
                note(
                    K::DuplicatesRemoved {
                        window_frames: 4,
                        window_micros: 250,
                    },
                    1,
                ),
                "1 duplicate frame removed (SPAN copies, or one packet seen on two interfaces): each held the same IP packet, byte for byte with its IP ID and TTL, as one of the 4 TCP frames before it, at most 250 µs apart (--keep-duplicates keeps them)",
            ),
            (
                note(K::HarEntrySkipped, 1)
                    .at(2)
                    .detail("no startedDateTime"),
                "entry 2 skipped: no startedDateTime",
            ),
            (
                note(K::HarReadingStopped { entry: 12, rest: 0 }, 1)
                    .at(45038)
                    .detail("EOF while parsing a string at line 1 column 45038"),
                "reading stopped in entry 12 at byte 45038 (EOF while parsing a string at line 1 column 45038): the rest of the file (0 bytes) was not read",
            ),
            (
                note(K::HarVersion, 1).detail("2.5"),
                "HAR version \"2.5\": read as HAR 1.2",
            ),
            (
                note(K::HarHttp2Entries, 4),
                "4 entries used HTTP/2 or HTTP/3: read with HTTP/1.1 semantics (pseudo-headers dropped)",
            ),
            (
                note(K::HarMessagesMoved, 2),
                "2 _eventSourceMessages times fell outside their response (first byte to end) and were moved into it",
            ),
            (
                note(K::HarOutOfOrder { window_mib: 256 }, 9),
                "entries far out of start order: 9 events were emitted after later ones (the reorder window of 256 MiB was full)",
            ),
            (note(K::MoreWarnings, 2), "... and 2 more warnings"),
            (
                note(K::LineSkipped, 1).at(3).detail("not a JSON object"),
                "line 3 skipped: not a JSON object",
            ),
            (
                note(K::LineTooLong { cap_mib: 16 }, 17825792).at(3),
                "line 3 skipped: 17825792 bytes, over the 16 MiB line cap",
            ),
            (
                note(K::LogReadingStopped, 1).at(9).detail("boom"),
                "reading stopped after line 9: boom",
            ),
            (
                note(K::MoreMalformedLines, 5),
                "... and 5 more malformed lines",
            ),
        ];
        for (n, want) in cases {
            assert_eq!(sentence(&n), want, "{n:?}");
        }
    }

    #[test]
    fn every_limit_reads_as_before() {
        use NoteKind as K;
        let cases: Vec<(Note, &str)> = vec![
            (
                note(K::PayloadsNotKept, 1).detail("No space left on device (os error 28)"),
                "cannot keep payload bytes in a temporary file: No space left on device (os error 28)",
            ),
            (
                note(K::SessionsLost, 2),
                "2 quiet sessions written to the spill file could not be read back",
            ),
            (
                note(
                    K::SessionEventsUnheld {
                        streams: 172,
                        max: 3,
                    },
                    772,
                ),
                "772 SSE events on 172 streams arrived after their session held 3 (--max-session-events): counted, not kept; resume_gap, skipped_events and unanswered_request are not determinable for those sessions",
            ),
            (
                note(K::SessionEventsUnheld { streams: 1, max: 3 }, 5),
                "5 SSE events on 1 stream arrived after their session held 3 (--max-session-events): counted, not kept; resume_gap, skipped_events and unanswered_request are not determinable for those sessions",
            ),
            (
                note(
                    K::SessionExchangesUnheld {
                        sessions: 1,
                        max: 200_000,
                    },
                    800_006,
                ),
                "800006 exchanges of 1 session came after their session held 200000 (--max-session-exchanges): counted, not kept, with their events; resume_gap, skipped_events and unanswered_request are not determinable for those sessions",
            ),
            (
                note(K::EventIdsNotIndexed, 8),
                "8 event IDs arrived while the index of the open sessions' IDs was full: cross_session_replay may be missed for the resumes that replayed them",
            ),
            (
                note(
                    K::Tls {
                        connections: 7,
                        not_decrypted: vec![],
                    },
                    7,
                ),
                "TLS: 7 of 7 connections decrypted with the key log",
            ),
            (
                note(
                    K::Tls {
                        connections: 9,
                        not_decrypted: vec![
                            ("no secret".into(), 1),
                            (
                                "cipher suite 0xC009 is not one this build decrypts".into(),
                                2,
                            ),
                        ],
                    },
                    6,
                ),
                "TLS: 6 of 9 connections decrypted with the key log; not decrypted: 2 (cipher suite 0xC009 is not one this build decrypts), 1 (no secret)",
            ),
            (
                note(
                    K::RecordsDamaged {
                        path: "a.records".into(),
                    },
                    1,
                )
                .at(12)
                .detail("no end line"),
                "the record file a.records could not be read past line 12 (no end line): what follows it is not in the report",
            ),
            (
                note(K::RecordsShareConnections, 4),
                "4 TCP connections of one record file were open at the same time as a connection of another on the same addresses and ports: if they are one link captured twice, their exchanges are counted twice here (extract those captures in one run, which reads the copies once)",
            ),
            (
                note(K::StoppedBySignal, 1),
                "reading was stopped by a signal (SIGINT, SIGTERM or SIGHUP): the report is of what was read until then, and requests still open then are pending, not unanswered",
            ),
            (
                note(K::MintingServersNotKept { max: 65536 }, 3),
                "3 servers minted session IDs after 65536 had been remembered: requests to them without one are not judged (status_code_violation session_header_missing_not_400)",
            ),
            (
                note(K::BodiesPastDecodingBudget, 2),
                "2 compressed bodies were decoded only up to the decoding budget (1 MiB, then 1024 bytes per compressed byte, at most 24 MiB saved): a decompression bomb, or a body too large to decode whole",
            ),
            (
                note(
                    K::BodiesPastConnectionBudget {
                        floor_mib: 24,
                        ratio: 64,
                    },
                    1,
                ),
                "1 compressed bodies were decoded only up to their connection's decoding budget (24 MiB, then 64 bytes per compressed byte): a decompression bomb, or bodies too large to decode whole",
            ),
            (
                note(K::SseStreamsCutInPacket { max: 65_536 }, 1),
                "1 event streams were not read past a packet that yielded more than 65536 SSE events (their content is not all known, so nothing is concluded from what it seems to lack)",
            ),
            (
                note(
                    K::HeaderBytesDropped {
                        block_kib: 256,
                        least_kib: 8,
                        conn_mib: 64,
                    },
                    9,
                ),
                "9 HTTP/2 header fields were dropped past the 256 KiB of decoded names and values a header block keeps (8 KiB once a direction of its connection kept 64 MiB), or repeated a pseudo-header",
            ),
            (
                note(K::HarStringsCut { cap_mib: 64 }, 1),
                "1 strings of an entry were cut at 64 MiB (their bodies are reported cut, so nothing is concluded from what they seem to lack)",
            ),
            (
                note(
                    K::BrotliBodiesRefused {
                        shard_mib: 64,
                        total_mib: 512,
                    },
                    2,
                ),
                "2 brotli bodies were not decoded: the bodies in progress on their shard (an eighth of the connections) already held the 64 MiB of decoding windows a shard may hold (512 MiB over all)",
            ),
            (
                note(
                    K::MessagesCutByHeld {
                        shard_mib: 128,
                        total_mib: 1024,
                    },
                    2,
                ),
                "2 messages were kept shorter than their own caps: the messages in progress on their shard (an eighth of the connections) held the 128 MiB of bodies and events a shard may hold (1024 MiB over all)",
            ),
            (
                note(K::HeaderFieldsDropped, 300),
                "300 header fields past the first 128 of a head were dropped (the fields that frame a message or name its session are kept)",
            ),
            (
                note(K::JsonBodiesShrunk, 1),
                "1 JSON bodies over 16 MiB were kept with their strings cut to 64 KiB",
            ),
            (
                note(
                    K::ObservationsNotCompared {
                        held_mib: 512,
                        per_input: 4,
                    },
                    3,
                ),
                "3 sessions were not compared with their observations in other inputs: 512 MiB of them held already, or more than 4 observations of one session ID in one input (lost_in_transit is not determinable for them)",
            ),
            (
                note(K::ReleasedEarly { max_events: 1 }, 12),
                "12 sessions were reported before their observations in other inputs ended (1 events held waiting, --max-held-events): their hop comparison was made with what was kept of them, and its findings went to the later observation; findings that need every observation at once (session_not_found across replicas) may be missed for them",
            ),
            (
                note(K::ReleasedEarly { max_events: 1 }, 1),
                "1 session was reported before its observations in other inputs ended (1 events held waiting, --max-held-events): their hop comparison was made with what was kept of them, and its findings went to the later observation; findings that need every observation at once (session_not_found across replicas) may be missed for them",
            ),
        ];
        for (n, want) in cases {
            assert_eq!(sentence(&n), want, "{n:?}");
        }
    }

    #[test]
    fn every_lack_reads_as_before() {
        let cases: Vec<(SourceLack, &str)> = vec![
            (
                SourceLack::HarTcp,
                "TCP-level evidence (packets, retransmissions, gaps, resets): a HAR records HTTP messages only",
            ),
            (
                SourceLack::HarClientAddresses,
                "client addresses and ports: a HAR records only the server's IP address",
            ),
            (
                SourceLack::HarConnections,
                "which exchanges shared a TCP connection (no \"connection\" field): each entry is counted as its own connection",
            ),
            (
                SourceLack::RequestBodies {
                    unknown: 2,
                    total: 9,
                },
                "2 of 9 request bodies (not stored by the exporter): the JSON-RPC messages they carried are unknown",
            ),
            (
                SourceLack::HarResponses {
                    entries: 1,
                    listed: vec![4],
                },
                "the response of 1 entry (no response object or status 0, and no _error: entry 4): unknown, never taken as unanswered",
            ),
            (
                SourceLack::HarResponses {
                    entries: 12,
                    listed: (1..=10).collect(),
                },
                "the response of 12 entries (no response object or status 0, and no _error: entries 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more): unknown, never taken as unanswered",
            ),
            (
                SourceLack::HarResponseBodies { count: 3 },
                "3 response bodies (not stored or removed by the exporter): the JSON-RPC messages they carried are unknown",
            ),
            (
                SourceLack::HarSseEvents {
                    unknown: 1,
                    total: 7,
                    stored_empty: false,
                },
                "the SSE events of 1 of 7 event streams (not stored by the exporter): replays, skipped ranges and duplicate events on them are not determinable",
            ),
            (
                SourceLack::HarSseEvents {
                    unknown: 1,
                    total: 5,
                    stored_empty: true,
                },
                "the SSE events of 1 of 5 event streams (stored empty: exporters such as mitmproxy without a recording addon, or a browser for fetch-based SSE, keep nothing of a streamed body): replays, skipped ranges and duplicate events on them are not determinable",
            ),
            (
                SourceLack::HarSseTimes,
                "the time of each SSE event: a HAR keeps none, so event times are spread between the response's first byte and its end (estimated)",
            ),
            (
                SourceLack::HarCredentials { sanitized: false },
                "Authorization, Cookie and Set-Cookie headers: none in the whole file, so they were stripped by the exporter or never sent; treated as unknown, not absent",
            ),
            (
                SourceLack::HarCredentials { sanitized: true },
                "Authorization, Cookie and Set-Cookie headers: none in the whole file, so the browser exported it sanitized (its default); treated as unknown, not absent",
            ),
            (
                SourceLack::HarServerAddresses,
                "server IP addresses of some entries (no serverIPAddress)",
            ),
            (
                SourceLack::LogBodies,
                "request and response bodies: an access log keeps no content, so no JSON-RPC messages and no SSE events; replays, skipped event ranges and duplicate events are not determinable (the event-ID scheme can still be inferred from logged Last-Event-ID values)",
            ),
            (
                SourceLack::LogSseEvents { streams: 15 },
                "the SSE events of 15 responses that are or may be event streams",
            ),
            (
                SourceLack::LogHeaders {
                    requests: vec!["accept".into(), "mcp-session-id".into()],
                    responses: vec![],
                },
                "every header except the logged ones (requests: accept, mcp-session-id; responses: none)",
            ),
            (
                SourceLack::LogMcpHeaders {
                    missing: vec![
                        McpHeader::SessionIdOnRequests,
                        McpHeader::SessionIdOnResponses,
                        McpHeader::LastEventIdOnRequests,
                        McpHeader::AcceptOnRequests,
                        McpHeader::ContentTypeOnResponses,
                    ],
                },
                "headers MCP analysis needs that this log does not carry: Mcp-Session-Id on requests (sessions cannot be rebuilt); Mcp-Session-Id on responses (session assignment and changes); Last-Event-ID on requests (resume attempts); Accept on requests (which streams the client asked for); Content-Type on responses (which responses were SSE streams)",
            ),
            (
                SourceLack::LogResponseStart { measured: true },
                "when each response began: estimated from the upstream's header time",
            ),
            (
                SourceLack::LogResponseStart { measured: false },
                "when each response began: taken as the request's start (estimated)",
            ),
            (
                SourceLack::LogRequestStart {
                    durations: Durations::All,
                },
                "when each request began: the log is written at the end, so start = end − duration",
            ),
            (
                SourceLack::LogRequestStart {
                    durations: Durations::Some,
                },
                "when some requests began (no duration on their line): their start is taken as their end",
            ),
            (
                SourceLack::LogRequestStart {
                    durations: Durations::None,
                },
                "when requests began (no duration field): each start is taken as its end",
            ),
            (
                SourceLack::LogCoarseTimes,
                "sub-second times: the time field has whole seconds (log $msec)",
            ),
            (
                SourceLack::LogResponseEnd,
                "how responses ended: a stream the client dropped looks complete unless the status says otherwise (499, 0); log nginx $request_completion or Envoy %RESPONSE_FLAGS% to know",
            ),
            (
                SourceLack::LogClientAddresses,
                "client addresses and ports of some or all requests",
            ),
            (
                SourceLack::LogConnections,
                "which requests shared a TCP connection (no connection id logged)",
            ),
            (
                SourceLack::LogTcp,
                "TCP-level evidence (packets, retransmissions, gaps, resets): an access log has one line per request",
            ),
        ];
        for (lack, want) in cases {
            let n = note(NoteKind::Lacks(lack), 1);
            assert_eq!(sentence(&n), format!("lacks {want}"), "{n:?}");
        }
    }

    #[test]
    fn an_input_is_written_with_its_fields_in_order_and_its_warnings_as_sentences() {
        let input = InputReport {
            path: "a.pcap".into(),
            warnings: vec![note(NoteKind::InterfaceDrops, 2)],
            ..InputReport::default()
        };
        let json = serde_json::to_value(InputJson::new(&input)).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "index",
                "path",
                "format",
                "unit",
                "packets",
                "bytes",
                "skipped",
                "warnings",
                "accounting",
                "error",
                "read_as"
            ]
        );
        let json = json.to_string();
        assert!(
            json.contains(r#""warnings":["the capturing interface reported 2 dropped packets"]"#)
        );
    }
}
