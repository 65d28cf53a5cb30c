//! Why a run found no MCP session, in words a newcomer can act on: no TCP at all, TLS, HTTP/2,
//! or HTTP that carried no MCP (with the ports, and `--server`).

use mcpf_http::HttpStats;
use mcpf_mcp::McpStats;
use mcpf_model::InputReport;

/// A one-line problem and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    pub problem: String,
    pub hint: String,
}

/// `port 8000`, `ports 8000, 8080`.
fn ports(p: &[u16]) -> String {
    let list = p
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if p.len() == 1 {
        format!("port {list}")
    } else {
        format!("ports {list}")
    }
}

/// What to tell the user when no MCP session came out of the inputs.
pub fn no_session(
    inputs: &[InputReport],
    connections: u64,
    http: &HttpStats,
    mcp: &McpStats,
) -> Vec<Hint> {
    let mut out = Vec::new();
    let packets: u64 = inputs.iter().map(|i| i.packets).sum();
    if packets == 0 {
        out.push(Hint {
            problem: "the capture holds no packets".into(),
            hint: "check the capture filter and that tcpdump ran while the traffic happened (use -U so packets are flushed)".into(),
        });
        return out;
    }
    if inputs
        .iter()
        .all(|i| i.error.is_some() || !i.format.is_capture())
    {
        return vec![no_session_in_records(inputs, mcp)];
    }
    if connections == 0 {
        let skipped: Vec<String> = inputs
            .iter()
            .flat_map(|i| i.skipped.iter().map(|(r, n)| format!("{n} {r}")))
            .collect();
        out.push(Hint {
            problem: format!(
                "no TCP traffic in {packets} packets{}",
                if skipped.is_empty() { String::new() } else { format!(" ({})", skipped.join(", ")) }
            ),
            hint: "capture the MCP server's TCP port, e.g. tcpdump -i any -s 0 -U -w mcp.pcap 'tcp port 8080'".into(),
        });
        return out;
    }
    if http.connections_tls > 0 {
        out.push(Hint {
            problem: format!(
                "{} (server {}): the traffic is encrypted",
                super::table::count(http.connections_tls, "TLS connection", "TLS connections"),
                ports(&http.tls_ports)
            ),
            hint: "give the client's key log (--tls-keylog FILE, or SSLKEYLOGFILE as the client had it), or capture the plaintext leg between the TLS-terminating proxy and the MCP server".into(),
        });
    }
    if http.heads_cut_by_snaplen > 0 {
        out.push(Hint {
            problem: format!(
                "the capture's snap length cut {} on {}: {}",
                super::table::count(http.heads_cut_by_snaplen, "HTTP head", "HTTP heads"),
                ports(&http.http_ports),
                what_was_cut(mcp)
            ),
            hint: "capture again with every byte of every packet: tcpdump -s 0 (the default of recent tcpdump; the input's warning gives the length it was cut at)".into(),
        });
        return out;
    }
    if http.connections_http + http.connections_http2 > 0 {
        out.push(Hint {
            problem: format!(
                "HTTP on {} carried no MCP{}",
                ports(&http.http_ports),
                what_it_carried(mcp, &http.set_aside)
            ),
            hint: "check that the capture covers the MCP endpoint; if the capture starts mid-connection, name the server with --server ADDR|PORT".into(),
        });
    } else if http.connections_tls == 0 {
        out.push(Hint {
            problem: format!(
                "{}, none of them HTTP ({} other, {} without data)",
                super::table::count(connections, "TCP connection", "TCP connections"),
                http.connections_other, http.connections_empty
            ),
            hint: "capture the MCP server's port; if it is there but the capture starts mid-connection, use --server ADDR|PORT".into(),
        });
    }
    out
}

/// Logs and HAR files hold no TCP: what to check is what they recorded, and how the log was
/// read.
fn no_session_in_records(inputs: &[InputReport], mcp: &McpStats) -> Hint {
    let records: u64 = inputs.iter().map(|i| i.packets).sum();
    let guessed = inputs.iter().any(|i| !i.read_as.is_empty());
    Hint {
        problem: format!(
            "{} read, {} of them an MCP exchange (none naming an Mcp-Session-Id, answering \
             initialize or posting to a legacy endpoint)",
            super::table::count(records, "record", "records"),
            mcp.exchanges_mcp
        ),
        hint: if guessed {
            "check how the log's keys were read (the line under the input); if a guess is wrong, \
             name the fields with --log-map"
                .into()
        } else {
            "check that the log covers the MCP endpoint and logs its Mcp-Session-Id header \
             (nginx: $http_mcp_session_id and $sent_http_mcp_session_id); for a log this tool \
             reads wrongly, name the fields with --log-map"
                .into()
        },
    }
}

/// Whether what the snap length left shows MCP.
fn what_was_cut(mcp: &McpStats) -> String {
    if mcp.requests_cut == 0 {
        return "the bodies behind them were not captured, so whether the traffic is MCP cannot be told".into();
    }
    format!(
        "this is MCP whose heads and bodies were cut ({} show {} in their first bytes), too little left to tell sessions apart",
        super::table::count(mcp.requests_cut, "request", "requests"),
        mcp.requests_cut_methods.join(", ")
    )
}

/// What the HTTP carried instead of MCP, when it was JSON-RPC or SSE.
fn what_it_carried(mcp: &McpStats, set_aside: &mcpf_http::sniff::SetAside) -> String {
    let mut parts = Vec::new();
    if set_aside.connections > 0 {
        parts.push(format!(
            "{} set aside as not MCP by their first request",
            super::table::count(set_aside.connections, "connection", "connections")
        ));
    }
    if mcp.jsonrpc_not_mcp > 0 {
        parts.push(format!(
            "{} without an MCP method or session header",
            super::table::count(
                mcp.jsonrpc_not_mcp,
                "JSON-RPC exchange",
                "JSON-RPC exchanges"
            )
        ));
    }
    if mcp.event_streams_not_mcp > 0 {
        parts.push(format!(
            "{} without MCP messages",
            super::table::count(mcp.event_streams_not_mcp, "event stream", "event streams")
        ));
    }
    if mcp.unattributed > 0 {
        parts.push(format!(
            "{} nothing tied to a session",
            super::table::count(mcp.unattributed, "MCP exchange", "MCP exchanges")
        ));
    }
    if parts.is_empty() {
        " (no Mcp-Session-Id, no MCP method, no MCP event stream)".into()
    } else {
        format!(": {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(packets: u64) -> InputReport {
        InputReport {
            path: "x.pcap".into(),
            format: mcpf_model::FileFormat::new(mcpf_model::FileKind::Pcap),
            packets,
            ..Default::default()
        }
    }

    #[test]
    fn explains_each_case() {
        let none = HttpStats::default();
        let mcp = McpStats::default();
        assert!(
            no_session(&[input(0)], 0, &none, &mcp)[0]
                .problem
                .contains("no packets")
        );
        assert!(
            no_session(&[input(5)], 0, &none, &mcp)[0]
                .problem
                .contains("no TCP")
        );
        let tls = HttpStats {
            connections_tls: 2,
            tls_ports: vec![443],
            ..Default::default()
        };
        let h = no_session(&[input(5)], 2, &tls, &mcp);
        assert!(h[0].problem.contains("TLS") && h[0].problem.contains("443"));
        let http = HttpStats {
            connections_http: 1,
            http_ports: vec![8000],
            ..Default::default()
        };
        let h = no_session(&[input(5)], 1, &http, &mcp);
        assert!(h[0].problem.contains("8000") && h[0].hint.contains("--server"));
        let other = McpStats {
            jsonrpc_not_mcp: 22,
            event_streams_not_mcp: 3,
            ..Default::default()
        };
        let h = no_session(&[input(5)], 1, &http, &other);
        assert!(
            h[0].problem.ends_with(
                "carried no MCP: 22 JSON-RPC exchanges without an MCP method or session header; 3 event streams without MCP messages"
            ),
            "{}",
            h[0].problem
        );
        let h2 = HttpStats {
            connections_http2: 1,
            ..Default::default()
        };
        // HTTP/2 is read as HTTP: with no MCP on it, that is what is said.
        assert!(
            no_session(&[input(5)], 1, &h2, &mcp)[0]
                .problem
                .contains("carried no MCP")
        );
    }
}
