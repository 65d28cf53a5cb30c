//! The `flows` view: one row per TCP connection with its reassembly health.

use std::io::{self, Write};

use serde::Serialize;

use mcpf_capture::tcp::{ConnSummary, HalfStats, ReassemblyStats};
use mcpf_model::InputReport;

use crate::ndjson;
use crate::note::InputJson;
use mcpf_model::{ConnId, endpoint};

use super::table::{bytes, duration, fitted_table};

#[derive(Debug, Serialize)]
pub struct FlowRow {
    /// Connection index in capture order (Wireshark's `tcp.stream`).
    id: ConnId,
    client: String,
    server: String,
    start: String,
    end: String,
    duration_s: f64,
    packets: u64,
    bytes_c2s: u64,
    bytes_s2c: u64,
    /// Holes in either direction: bytes that crossed the wire but are not in the capture.
    gaps: u64,
    gap_bytes: u64,
    retransmissions: u64,
    out_of_order: u64,
    /// Retransmitted bytes that disagreed with the first copy (the first copy was kept).
    conflicts: u64,
    handshake_seen: bool,
    /// How client and server were told apart: `syn`, `syn-ack`, `http-request-line`,
    /// `http-status-line` or `lower-port`.
    roles_from: &'static str,
    ended: &'static str,
    c2s: HalfStats,
    s2c: HalfStats,
}

impl FlowRow {
    pub fn from_summary(s: &ConnSummary) -> Self {
        FlowRow {
            id: s.conn,
            client: endpoint(s.client),
            server: endpoint(s.server),
            start: s.start.time.rfc3339(),
            end: s.end.time.rfc3339(),
            duration_s: s.end.time.seconds_since(s.start.time),
            packets: s.packets,
            bytes_c2s: s.c2s.bytes,
            bytes_s2c: s.s2c.bytes,
            gaps: s.c2s.gaps + s.s2c.gaps,
            gap_bytes: s.c2s.gap_bytes + s.s2c.gap_bytes,
            retransmissions: s.c2s.retransmissions + s.s2c.retransmissions,
            out_of_order: s.c2s.out_of_order + s.s2c.out_of_order,
            conflicts: s.c2s.conflicts + s.s2c.conflicts,
            handshake_seen: s.handshake_seen,
            roles_from: s.role_basis.name(),
            ended: s.close.name(),
            c2s: s.c2s.clone(),
            s2c: s.s2c.clone(),
        }
    }
}

#[derive(Serialize)]
struct FlowsDocument<'a> {
    schema_version: u32,
    connections: &'a [FlowRow],
    inputs: Vec<InputJson<'a>>,
    reassembly: ReassemblyJson,
}

#[derive(Serialize)]
struct ReassemblyJson {
    connections: u64,
    direction_buffer_limit_hits: u64,
    total_buffer_limit_hits: u64,
    idle_evictions: u64,
    table_evictions: u64,
    table_evictions_with_payload: u64,
    direction_piece_limit_hits: u64,
    total_piece_limit_hits: u64,
    peak_buffered_bytes: usize,
    peak_buffered_pieces: usize,
}

fn reassembly_json(stats: &ReassemblyStats) -> ReassemblyJson {
    ReassemblyJson {
        connections: stats.connections,
        direction_buffer_limit_hits: stats.direction_limit_hits,
        total_buffer_limit_hits: stats.total_limit_hits,
        idle_evictions: stats.idle_evictions,
        table_evictions: stats.table_evictions,
        table_evictions_with_payload: stats.table_evictions_with_payload,
        direction_piece_limit_hits: stats.direction_piece_limit_hits,
        total_piece_limit_hits: stats.total_piece_limit_hits,
        peak_buffered_bytes: stats.peak_buffered,
        peak_buffered_pieces: stats.peak_pieces,
    }
}

/// The version of `flows --format json` (docs/report-format.md, "Other commands").
pub const FLOWS_SCHEMA_VERSION: u32 = 1;

pub fn write_json(
    out: &mut dyn Write,
    rows: &[FlowRow],
    inputs: &[InputReport],
    stats: &ReassemblyStats,
) -> io::Result<()> {
    let doc = FlowsDocument {
        schema_version: FLOWS_SCHEMA_VERSION,
        connections: rows,
        inputs: InputJson::all(inputs),
        reassembly: reassembly_json(stats),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    writeln!(out)
}

/// The document's content one record per line, in its order: every `connection` and `input`,
/// then one `summary` holding `reassembly`.
pub fn write_ndjson(
    out: &mut dyn Write,
    rows: &[FlowRow],
    inputs: &[InputReport],
    stats: &ReassemblyStats,
) -> io::Result<()> {
    let v = FLOWS_SCHEMA_VERSION;
    for row in rows {
        ndjson::write_record(out, "connection", v, row)?;
    }
    for input in inputs {
        ndjson::write_record(out, "input", v, &InputJson::new(input))?;
    }
    let summary = serde_json::json!({ "reassembly": reassembly_json(stats) });
    ndjson::write_record(out, "summary", v, &summary)
}

/// The columns of the flows table, and the order they are left out in when it is too wide.
const COLUMNS: [&str; 11] = [
    "#",
    "client",
    "server",
    "start",
    "duration",
    "c→s",
    "s→c",
    "gaps",
    "retrans",
    "out of order",
    "ended",
];
const DROPPED: [usize; 7] = [9, 8, 3, 4, 6, 7, 5];

pub fn write_table(
    out: &mut dyn Write,
    rows: &[FlowRow],
    inputs: &[InputReport],
    stats: &ReassemblyStats,
    width: usize,
) -> io::Result<()> {
    for input in inputs {
        super::write_input_line(out, input, "", width)?;
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let gaps = if r.gaps == 0 {
                "0".to_string()
            } else {
                format!("{} ({})", r.gaps, bytes(r.gap_bytes))
            };
            vec![
                r.id.to_string(),
                r.client.clone(),
                r.server.clone(),
                r.start.clone(),
                duration(r.duration_s),
                bytes(r.bytes_c2s),
                bytes(r.bytes_s2c),
                gaps,
                r.retransmissions.to_string(),
                r.out_of_order.to_string(),
                r.ended.to_string(),
            ]
        })
        .collect();
    let (table, dropped) = fitted_table(&COLUMNS, &cells, &DROPPED, &[], width);
    writeln!(out, "{table}")?;
    if !dropped.is_empty() {
        let note = format!(
            "(left out to fit {width} columns: {}; --format json has them)",
            dropped.join(", ")
        );
        writeln!(out, "{}", super::table::wrap(&note, width, "", "  "))?;
    }
    let lost: u64 = rows.iter().map(|r| r.gap_bytes).sum();
    let with_gaps = rows.iter().filter(|r| r.gaps > 0).count();
    writeln!(
        out,
        "{} connections; {} lost data ({})",
        rows.len(),
        with_gaps,
        bytes(lost)
    )?;
    if stats.direction_limit_hits + stats.total_limit_hits > 0 {
        writeln!(
            out,
            "warning: the reassembly buffer limit was reached {} times; holes were declared lost early (raise --max-buffer-per-direction / --max-buffer-total)",
            stats.direction_limit_hits + stats.total_limit_hits
        )?;
    }
    let piece_hits = stats.direction_piece_limit_hits + stats.total_piece_limit_hits;
    if piece_hits > 0 {
        writeln!(
            out,
            "warning: the limit of out-of-order pieces was reached {piece_hits} times; holes were declared lost early"
        )?;
    }
    if stats.table_evictions > 0 {
        writeln!(
            out,
            "warning: the connection table was full: {} connections were evicted ({} had carried bytes)",
            stats.table_evictions, stats.table_evictions_with_payload
        )?;
    }
    if stats.idle_evictions > 0 {
        writeln!(
            out,
            "note: {} idle connections were closed after --idle-timeout",
            stats.idle_evictions
        )?;
    }
    Ok(())
}
