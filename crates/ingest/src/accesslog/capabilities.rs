//! What an access log can support, judged over all its records, and what it lacks, in
//! sentences: a log keeps no bodies, only the headers it was configured to log, and times
//! that are partly derived (a start from the duration, a first byte estimated).

use std::collections::BTreeSet;

use mcpf_model::{Capabilities, HeaderCoverage, LogFlavor, SourceFormat};

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

/// What the log lacks, in sentences; `streams` responses are or may be event streams.
pub(super) fn lacks(caps: &mut Capabilities, facts: &Facts, flavor: LogFlavor, streams: u64) {
    let lacks = &mut caps.lacks;
    lacks.push(
        "request and response bodies: an access log keeps no content, so no JSON-RPC messages \
         and no SSE events; replays, skipped event ranges and duplicate events are not \
         determinable (the event-ID scheme can still be inferred from logged Last-Event-ID values)"
            .into(),
    );
    if streams > 0 {
        lacks.push(format!(
            "the SSE events of {streams} responses that are or may be event streams"
        ));
    }
    if flavor != LogFlavor::Caddy {
        header_lacks(lacks, facts);
    }
    lacks.push(if facts.head_measured {
        "when each response began: estimated from the upstream's header time".into()
    } else {
        "when each response began: taken as the request's start (estimated)".into()
    });
    if !facts.start_logged {
        lacks.push(if facts.all_durations {
            "when each request began: the log is written at the end, so start = end − duration".into()
        } else if facts.any_duration {
            "when some requests began (no duration on their line): their start is taken as their end".into()
        } else {
            "when requests began (no duration field): each start is taken as its end".into()
        });
    }
    if facts.coarse_times {
        lacks.push("sub-second times: the time field has whole seconds (log $msec)".into());
    }
    if !caps.response_end_known {
        lacks.push(
            "how responses ended: a stream the client dropped looks complete unless the \
             status says otherwise (499, 0); log nginx $request_completion or Envoy \
             %RESPONSE_FLAGS% to know"
                .into(),
        );
    }
    if !caps.client_addresses {
        lacks.push("client addresses and ports of some or all requests".into());
    }
    if !caps.connections {
        lacks.push("which requests shared a TCP connection (no connection id logged)".into());
    }
    lacks.push(
        "TCP-level evidence (packets, retransmissions, gaps, resets): an access log has one line per request"
            .into(),
    );
}

/// Headers MCP analysis needs: (name, on requests, what is lost without it).
const MCP_HEADERS: [(&str, bool, &str); 5] = [
    (
        "mcp-session-id",
        true,
        "Mcp-Session-Id on requests (sessions cannot be rebuilt)",
    ),
    (
        "mcp-session-id",
        false,
        "Mcp-Session-Id on responses (session assignment and changes)",
    ),
    (
        "last-event-id",
        true,
        "Last-Event-ID on requests (resume attempts)",
    ),
    (
        "accept",
        true,
        "Accept on requests (which streams the client asked for)",
    ),
    (
        "content-type",
        false,
        "Content-Type on responses (which responses were SSE streams)",
    ),
];

/// The headers a log that names its headers (all but Caddy's) did not log.
fn header_lacks(lacks: &mut Vec<String>, facts: &Facts) {
    let list = |s: &BTreeSet<String>| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        }
    };
    lacks.push(format!(
        "every header except the logged ones (requests: {}; responses: {})",
        list(&facts.req_header_names),
        list(&facts.resp_header_names)
    ));
    let missing: Vec<&str> = MCP_HEADERS
        .into_iter()
        .filter(|(h, req, _)| {
            if *req {
                !facts.req_header_names.contains(*h)
            } else {
                !facts.resp_header_names.contains(*h)
            }
        })
        .map(|(_, _, what)| what)
        .collect();
    if !missing.is_empty() {
        lacks.push(format!(
            "headers MCP analysis needs that this log does not carry: {}",
            missing.join("; ")
        ));
    }
}
