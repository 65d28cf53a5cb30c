# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_mcp_forensics_global_optspecs
    string join \n h/help V/version
end

function __fish_mcp_forensics_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_mcp_forensics_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_mcp_forensics_using_subcommand
    set -l cmd (__fish_mcp_forensics_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -s h -l help -d 'Print help'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -s V -l version -d 'Print version'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "flows" -d 'List the TCP connections of captures with their reassembly health'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "http" -d 'List the HTTP/1.1 exchanges of captures, HAR files and JSON access logs, with SSE events and JSON-RPC messages'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "analyze" -d 'Rebuild MCP sessions and report what went wrong: the incident timeline'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "extract" -d 'Write the exchange records of captures, HAR files and logs, for `analyze` elsewhere'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "report" -d 'Render a saved report again, without the capture'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "explain" -d 'Explain a finding kind: what it means, why it matters, what to change'
complete -c mcp-forensics -n "__fish_mcp_forensics_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -s f -l format -d 'Output format (by default the table, or what the --output file\'s extension names: .json, .ndjson)' -r -f -a "table\t'Aligned tables for people'
json\t'One JSON document (schema_version 1, see docs/report-format.md)'
ndjson\t'One JSON record per line, each with its type and schema_version'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -s o -l output -d 'Write the view to FILE instead of standard output (created, or truncated); warnings stay on standard error' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l max-buffer-per-direction -d 'Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l max-buffer-total -d 'Out-of-order bytes held over all connections' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l max-connections -d 'Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l idle-timeout -d 'Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l threads -d 'analyze: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default: the cores the machine has. (The http and flows views run on one thread.)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l tunnel -d 'Read UDP datagrams to PORT as a tunnel (repeatable): udp:PORT=vxlan or udp:PORT=geneve, e.g. udp:8472=vxlan (the VXLAN port of the Linux kernel\'s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -l keep-duplicates -d 'Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender\'s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand flows" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -s f -l format -d 'Output format (by default the table, or what the --output file\'s extension names: .json, .ndjson)' -r -f -a "table\t'Aligned tables for people'
json\t'One JSON document (schema_version 1, see docs/report-format.md)'
ndjson\t'One JSON record per line, each with its type and schema_version'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -s o -l output -d 'Write the view to FILE instead of standard output (created, or truncated); warnings stay on standard error' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l input-format -d 'How to read every FILE: auto detects it from the content (pcap/pcapng magic, a HAR\'s log.entries, the keys of a JSON log\'s first line)' -r -f -a "auto\t'Detect from the content'
pcap\t'A packet capture (pcap or pcapng)'
har\t'A HAR file'
log\t'A JSON Lines access log'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l log-map -d 'Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as key=FIELD,... or a JSON file (or inline object) of the same keys. Keys: time (end of the request) or start, method, path, status, duration, duration_unit (s, ms, us, ns), req.HEADER and resp.HEADER (a field holding that header), request_headers and response_headers (a field holding an object of headers), client, connection. Nested fields as a.b. Applies to every JSON Lines input' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l log-format -d 'The nginx log_format of a text access log (`combined`, or the format string with extra quoted fields such as "$http_mcp_session_id" "$sent_http_mcp_session_id" "$http_last_event_id"): every input that is not a capture is read as lines in it' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -s k -l tls-keylog -d 'An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write): TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2\'s AES-CBC suites). Default: $SSLKEYLOGFILE when it is set. The secrets are never written to any output' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l max-buffer-per-direction -d 'Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l max-buffer-total -d 'Out-of-order bytes held over all connections' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l max-connections -d 'Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l idle-timeout -d 'Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l threads -d 'analyze: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default: the cores the machine has. (The http and flows views run on one thread.)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l tunnel -d 'Read UDP datagrams to PORT as a tunnel (repeatable): udp:PORT=vxlan or udp:PORT=geneve, e.g. udp:8472=vxlan (the VXLAN port of the Linux kernel\'s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l show-secrets -d 'Show credentials instead of redacting them. By default every output redacts the value of every name that announces a credential, by one rule wherever the name is (a header, a query, fragment or path parameter, a JSON member): names holding token, secret, password, passphrase, credential, signature, cookie, auth or jsessionid, or ending in key after another word (api_key, access_key, X-Api-Key); identifiers (Mcp-Session-Id, session_id, Last-Event-ID), Idempotency-Key and progressToken are kept. Also a URL\'s userinfo password, and tokens of a known shape anywhere (sk-..., sk_live_..., ghp_..., github_pat_..., glpat-..., xoxb-..., AIza..., AKIA... and the secret access key next to it, JWTs, Bearer tokens), keeping their prefix and length'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -l keep-duplicates -d 'Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender\'s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand http" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s o -l output -d 'Write the report to FILE instead of standard output (created, or truncated); warnings and the progress bar stay on standard error, and the report is not coloured unless --color always' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l write-pcap -d 'After the report, write into DIR (created if need be) one capture per session shown, S1.pcap, holding every frame of the TCP connections that carried its streams, unchanged (time, bytes, link type). With several capture inputs, one per input: S1.I2.pcap. A pcapng input gives .pcapng files. HAR files and logs have no frames and are passed over. The inputs are read a second time: standard input and FIFOs are refused' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s f -l format -d 'Output format (by default the table, or what the --output file\'s extension names: .json, .ndjson, .md, .html)' -r -f -a "table\t'Sessions, findings and the incident timeline, for people'
json\t'One JSON document (schema_version 1, see docs/report-format.md)'
ndjson\t'One JSON record per line (input, session, finding, timeline, event, summary)'
markdown\t'For a postmortem: the verdict, sessions, findings (with Wireshark filters), a Mermaid sequence diagram and the timeline of each incident, as Markdown'
html\t'One self-contained HTML file: a swimlane view per incident (a lane per stream, the fallback, drop, resume and replay drawn across lanes) and the findings with their evidence'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l live-flush -d 'On a live pipe written as NDJSON, a session quiet for SECS (capture time) is reported as it stands, an `interim` record with what its own detectors find so far, without waiting for its end; again if it goes on and falls quiet again; finally when it ends' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s s -l session -d 'Only this session (S1, S2... or an Mcp-Session-Id, whole or as the table shortens it: 2665…92a9); repeatable. One that names no session is an error' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l since -d 'Only what happened at or after this time: RFC 3339 (2026-11-02T12:00:00Z), or a time of day in UTC as the timeline prints it (04:36:14.297), on each session\'s date' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l until -d 'Only what happened at or before this time (as --since)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s m -l min-severity -d 'Hide findings below this severity' -r -f -a "critical\t''
high\t''
medium\t''
low\t''
info\t''"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l fail-on -d 'Exit with status 1 when a finding is at or above this severity' -r -f -a "critical\t''
high\t''
medium\t''
low\t''
info\t''"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l server -d 'Treat this endpoint as an MCP server when telling client from server (an address, a port, or address:port); repeatable. Needed only when a capture starts mid-connection on unusual ports' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l color -d 'When to colour the terminal report (auto: on a terminal, unless NO_COLOR is set)' -r -f -a "auto\t'Colour when standard output is a terminal and NO_COLOR is not set'
always\t''
never\t''"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l progress -d 'When to show a progress bar on standard error (auto: when it is a terminal), whatever the colour; always on a standard error that is no terminal (a log) writes a plain line every two seconds instead' -r -f -a "auto\t''
always\t''
never\t''"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l input-format -d 'How to read every FILE: auto detects it from the content (pcap/pcapng magic, a HAR\'s log.entries, the keys of a JSON log\'s first line)' -r -f -a "auto\t'Detect from the content'
pcap\t'A packet capture (pcap or pcapng)'
har\t'A HAR file'
log\t'A JSON Lines access log'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l log-map -d 'Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as key=FIELD,... or a JSON file (or inline object) of the same keys. Keys: time (end of the request) or start, method, path, status, duration, duration_unit (s, ms, us, ns), req.HEADER and resp.HEADER (a field holding that header), request_headers and response_headers (a field holding an object of headers), client, connection. Nested fields as a.b. Applies to every JSON Lines input' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l log-format -d 'The nginx log_format of a text access log (`combined`, or the format string with extra quoted fields such as "$http_mcp_session_id" "$sent_http_mcp_session_id" "$http_last_event_id"): every input that is not a capture is read as lines in it' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s k -l tls-keylog -d 'An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write): TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2\'s AES-CBC suites). Default: $SSLKEYLOGFILE when it is set. The secrets are never written to any output' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l max-session-events -d 'SSE events one session holds for analysis (about 300 bytes each while it is analysed); past it events are counted, not held, and findings that rest on an event\'s absence (unanswered_request, skipped_events, resume_gap) are reported as not determinable for that session' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l max-session-exchanges -d 'Exchanges one session holds for analysis (about a kilobyte each); past it exchanges are counted, not held, and findings that rest on an answer\'s or event\'s absence are reported as not determinable for that session' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l max-held-events -d 'SSE events the sessions seen in several inputs may hold together while they wait for their other observations to end (for the hop comparison); past it the oldest are reported at once and compared with what is kept of them' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l max-buffer-per-direction -d 'Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l max-buffer-total -d 'Out-of-order bytes held over all connections' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l max-connections -d 'Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l idle-timeout -d 'Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l threads -d 'analyze: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default: the cores the machine has. (The http and flows views run on one thread.)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l tunnel -d 'Read UDP datagrams to PORT as a tunnel (repeatable): udp:PORT=vxlan or udp:PORT=geneve, e.g. udp:8472=vxlan (the VXLAN port of the Linux kernel\'s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l write-pcap-per-finding -d 'With --write-pcap, also one capture per finding shown, F4.pcap, holding exactly the frames it cites (at every vantage point)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s e -l events -d 'Add every SSE event (session, stream, namespace, ID, time, frame, JSON-RPC summary) to the JSON and NDJSON reports'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l all-events -d 'Show every event in the timeline instead of condensed runs'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s a -l all -d 'Print the timeline of every session, those without findings too (the table prints the timelines of incidents, and of the sessions --session names)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s p -l profile -d 'Add the call profile to the table: per server and per tool or method, the calls, errors (JSON-RPC codes, isError results, HTTP statuses), those with no answer, and latency p50/p95/p99/max. The JSON and NDJSON reports always have it'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l no-pager -d 'Write the table straight to the terminal. Without it, a table taller than the terminal is shown in a pager ($PAGER, else `less -FRX`, as git does), so it opens on the verdict'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l examine-all -d 'Examine every connection whole. Without it, a connection whose first bytes show it does not carry MCP (TLS without keys, not HTTP, a first request that cannot be MCP) is set aside, its bytes counted and not parsed, unless it shows MCP later (docs/classification.md)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l show-secrets -d 'Show credentials instead of redacting them. By default every output redacts the value of every name that announces a credential, by one rule wherever the name is (a header, a query, fragment or path parameter, a JSON member): names holding token, secret, password, passphrase, credential, signature, cookie, auth or jsessionid, or ending in key after another word (api_key, access_key, X-Api-Key); identifiers (Mcp-Session-Id, session_id, Last-Event-ID), Idempotency-Key and progressToken are kept. Also a URL\'s userinfo password, and tokens of a known shape anywhere (sk-..., sk_live_..., ghp_..., github_pat_..., glpat-..., xoxb-..., AIza..., AKIA... and the secret access key next to it, JWTs, Bearer tokens), keeping their prefix and length'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s q -l quiet -d 'No progress bar (as --progress never)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -l keep-duplicates -d 'Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender\'s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand analyze" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -s o -l output -d 'Where the records go: a directory (created if need be), which gets FIRST-INPUT.records.ndjson, or a file path ending in .ndjson' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l input-format -d 'How to read every FILE: auto detects it from the content (pcap/pcapng magic, a HAR\'s log.entries, the keys of a JSON log\'s first line)' -r -f -a "auto\t'Detect from the content'
pcap\t'A packet capture (pcap or pcapng)'
har\t'A HAR file'
log\t'A JSON Lines access log'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l log-map -d 'Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as key=FIELD,... or a JSON file (or inline object) of the same keys. Keys: time (end of the request) or start, method, path, status, duration, duration_unit (s, ms, us, ns), req.HEADER and resp.HEADER (a field holding that header), request_headers and response_headers (a field holding an object of headers), client, connection. Nested fields as a.b. Applies to every JSON Lines input' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l log-format -d 'The nginx log_format of a text access log (`combined`, or the format string with extra quoted fields such as "$http_mcp_session_id" "$sent_http_mcp_session_id" "$http_last_event_id"): every input that is not a capture is read as lines in it' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -s k -l tls-keylog -d 'An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write): TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2\'s AES-CBC suites). Default: $SSLKEYLOGFILE when it is set. The secrets are never written to any output' -r -F
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l max-buffer-per-direction -d 'Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l max-buffer-total -d 'Out-of-order bytes held over all connections' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l max-connections -d 'Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l idle-timeout -d 'Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l threads -d 'analyze: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default: the cores the machine has. (The http and flows views run on one thread.)' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l tunnel -d 'Read UDP datagrams to PORT as a tunnel (repeatable): udp:PORT=vxlan or udp:PORT=geneve, e.g. udp:8472=vxlan (the VXLAN port of the Linux kernel\'s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses' -r
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l show-secrets -d 'Write credentials into the records as they were sent (see analyze --show-secrets)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l examine-all -d 'Examine every connection whole (see analyze --examine-all)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -s q -l quiet -d 'No progress bar'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -l keep-duplicates -d 'Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender\'s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand extract" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand report" -l format -d 'How to render it' -r -f -a "table\t'The terminal report'
markdown\t'The postmortem Markdown of `analyze --format markdown`'
html\t'The self-contained HTML of `analyze --format html`'"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand report" -l color -d 'Colour in the terminal report' -r -f -a "auto\t'Colour when standard output is a terminal and NO_COLOR is not set'
always\t''
never\t''"
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand report" -l no-pager -d 'Write the table straight to the terminal, never through a pager (as analyze)'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand explain" -s h -l help -d 'Print help'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "flows" -d 'List the TCP connections of captures with their reassembly health'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "http" -d 'List the HTTP/1.1 exchanges of captures, HAR files and JSON access logs, with SSE events and JSON-RPC messages'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "analyze" -d 'Rebuild MCP sessions and report what went wrong: the incident timeline'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "extract" -d 'Write the exchange records of captures, HAR files and logs, for `analyze` elsewhere'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "report" -d 'Render a saved report again, without the capture'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "explain" -d 'Explain a finding kind: what it means, why it matters, what to change'
complete -c mcp-forensics -n "__fish_mcp_forensics_using_subcommand help; and not __fish_seen_subcommand_from flows http analyze extract report explain help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
