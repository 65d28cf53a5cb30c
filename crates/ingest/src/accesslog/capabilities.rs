//! What an access log can support, judged over all its records, and what it lacks (worded by
//! the report): a log keeps no bodies, only the headers it was configured to log, and times
//! that are partly derived (a start from the duration, a first byte estimated).

use mcpf_model::SourceFormat;
use mcpf_model::{Capabilities, Durations, HeaderCoverage, LogFlavor, McpHeader, SourceLack};

use super::Facts;

pub(super) fn capabilities(flavor: LogFlavor, facts: &Facts, any_records: bool) -> Capabilities {
    let mut caps = Capabilities::new(SourceFormat::AccessLog(flavor));
    caps.producer = Some(
        match flavor {
            LogFlavor::Nginx => "nginx",
            LogFlavor::Envoy => "Envoy",
            LogFlavor::Caddy => "Caddy",
            LogFlavor::Haproxy => "HAProxy",
            LogFlavor::Traefik => "Traefik",
            LogFlavor::Mapped => "access log read with --log-map",
        }
        .into(),
    );
    caps.response_start_estimated = true;
    caps.start_from_duration = !facts.start_logged;
    caps.client_addresses = any_records && facts.all_clients;
    caps.server_addresses = any_records && facts.all_servers;
    caps.connections = any_records && facts.all_conns;
    caps.response_end_known = facts.ending_logged;
    if facts.coarse_times {
        caps.time_resolution_ns = 1_000_000_000;
    }
    caps.sanitized = facts.redacted;
    if flavor == LogFlavor::Caddy {
        caps.request_headers = HeaderCoverage::All { except: Vec::new() };
        caps.response_headers = HeaderCoverage::All { except: Vec::new() };
    } else {
        caps.request_headers =
            HeaderCoverage::Only(facts.req_header_names.iter().cloned().collect());
        caps.response_headers =
            HeaderCoverage::Only(facts.resp_header_names.iter().cloned().collect());
    }
    caps
}

/// What the log lacks (the report words it); `streams` responses are or may be event streams.
pub(super) fn lacks(caps: &mut Capabilities, facts: &Facts, flavor: LogFlavor, streams: u64) {
    let mut lacks = vec![SourceLack::LogBodies];
    if streams > 0 {
        lacks.push(SourceLack::LogSseEvents { streams });
    }
    if flavor != LogFlavor::Caddy {
        header_lacks(&mut lacks, facts);
    }
    let measured = facts.head_measured;
    lacks.push(SourceLack::LogResponseStart { measured });
    if !facts.start_logged {
        let durations = if facts.all_durations {
            Durations::All
        } else if facts.any_duration {
            Durations::Some
        } else {
            Durations::None
        };
        lacks.push(SourceLack::LogRequestStart { durations });
    } else if facts.durations_missing > 0 {
        lacks.push(SourceLack::LogDurationsMissing {
            records: facts.durations_missing,
        });
    }
    for (&how, &records) in &facts.estimated {
        lacks.push(SourceLack::LogDurationsEstimated { records, how });
    }
    if facts.coarse_times {
        lacks.push(SourceLack::LogCoarseTimes);
    }
    if !caps.response_end_known {
        lacks.push(SourceLack::LogResponseEnd);
    }
    if !caps.client_addresses {
        lacks.push(SourceLack::LogClientAddresses);
    }
    if !caps.connections {
        lacks.push(SourceLack::LogConnections);
    }
    lacks.push(SourceLack::LogTcp);
    caps.lacks.extend(lacks);
}

/// Headers MCP analysis needs: (name, on requests, the header as the report names it).
const MCP_HEADERS: [(&str, bool, McpHeader); 5] = [
    ("mcp-session-id", true, McpHeader::SessionIdOnRequests),
    ("mcp-session-id", false, McpHeader::SessionIdOnResponses),
    ("last-event-id", true, McpHeader::LastEventIdOnRequests),
    ("accept", true, McpHeader::AcceptOnRequests),
    ("content-type", false, McpHeader::ContentTypeOnResponses),
];

/// The headers a log that names its headers (all but Caddy's) did not log.
fn header_lacks(lacks: &mut Vec<SourceLack>, facts: &Facts) {
    lacks.push(SourceLack::LogHeaders {
        requests: facts.req_header_names.iter().cloned().collect(),
        responses: facts.resp_header_names.iter().cloned().collect(),
    });
    let missing: Vec<McpHeader> = MCP_HEADERS
        .into_iter()
        .filter(|(h, req, _)| {
            if *req {
                !facts.req_header_names.contains(*h)
            } else {
                !facts.resp_header_names.contains(*h)
            }
        })
        .map(|(_, _, header)| header)
        .collect();
    if !missing.is_empty() {
        lacks.push(SourceLack::LogMcpHeaders { missing });
    }
}
