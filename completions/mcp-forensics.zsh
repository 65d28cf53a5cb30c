#compdef mcp-forensics

autoload -U is-at-least

_mcp-forensics() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_mcp-forensics_commands" \
"*::: :->mcp-forensics" \
&& ret=0
    case $state in
    (mcp-forensics)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:mcp-forensics-command-$line[1]:"
        case $line[1] in
            (flows)
_arguments "${_arguments_options[@]}" : \
'-f+[Output format (by default the table, or what the --output file'\''s extension names\: .json, .ndjson)]:FORMAT:((table\:"Aligned tables for people"
json\:"One JSON document (schema_version 1, see docs/report-format.md)"
ndjson\:"One JSON record per line, each with its type and schema_version"))' \
'--format=[Output format (by default the table, or what the --output file'\''s extension names\: .json, .ndjson)]:FORMAT:((table\:"Aligned tables for people"
json\:"One JSON document (schema_version 1, see docs/report-format.md)"
ndjson\:"One JSON record per line, each with its type and schema_version"))' \
'-o+[Write the view to FILE instead of standard output (created, or truncated); warnings stay on standard error]:FILE:_files' \
'--output=[Write the view to FILE instead of standard output (created, or truncated); warnings stay on standard error]:FILE:_files' \
'--max-buffer-per-direction=[Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)]:BYTES:_default' \
'--max-buffer-total=[Out-of-order bytes held over all connections]:BYTES:_default' \
'--max-connections=[Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported]:N:_default' \
'--idle-timeout=[Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)]:SECS:_default' \
'--threads=[analyze\: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default\: the cores the machine has. (The http and flows views run on one thread.)]:N:_default' \
'*--tunnel=[Read UDP datagrams to PORT as a tunnel (repeatable)\: udp\:PORT=vxlan or udp\:PORT=geneve, e.g. udp\:8472=vxlan (the VXLAN port of the Linux kernel'\''s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses]:udp:PORT=KIND:_default' \
'--keep-duplicates[Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them\: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender'\''s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::files -- Capture files (pcap or pcapng, optionally gzip-compressed); - reads standard input:_default' \
&& ret=0
;;
(http)
_arguments "${_arguments_options[@]}" : \
'-f+[Output format (by default the table, or what the --output file'\''s extension names\: .json, .ndjson)]:FORMAT:((table\:"Aligned tables for people"
json\:"One JSON document (schema_version 1, see docs/report-format.md)"
ndjson\:"One JSON record per line, each with its type and schema_version"))' \
'--format=[Output format (by default the table, or what the --output file'\''s extension names\: .json, .ndjson)]:FORMAT:((table\:"Aligned tables for people"
json\:"One JSON document (schema_version 1, see docs/report-format.md)"
ndjson\:"One JSON record per line, each with its type and schema_version"))' \
'-o+[Write the view to FILE instead of standard output (created, or truncated); warnings stay on standard error]:FILE:_files' \
'--output=[Write the view to FILE instead of standard output (created, or truncated); warnings stay on standard error]:FILE:_files' \
'--input-format=[How to read every FILE\: auto detects it from the content (pcap/pcapng magic, a HAR'\''s log.entries, the keys of a JSON log'\''s first line)]:FORMAT:((auto\:"Detect from the content"
pcap\:"A packet capture (pcap or pcapng)"
har\:"A HAR file"
log\:"A JSON Lines access log"))' \
'--log-map=[Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as key=FIELD,... or a JSON file (or inline object) of the same keys. Keys\: time (end of the request) or start, method, path, status, duration, duration_unit (s, ms, us, ns), req.HEADER and resp.HEADER (a field holding that header), request_headers and response_headers (a field holding an object of headers), client, connection. Nested fields as a.b. Applies to every JSON Lines input]:MAP:_default' \
'(--log-map)--log-format=[The nginx log_format of a text access log (\`combined\`, or the format string with extra quoted fields such as "\$http_mcp_session_id" "\$sent_http_mcp_session_id" "\$http_last_event_id")\: every input that is not a capture is read as lines in it]:FORMAT:_default' \
'-k+[An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write)\: TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2'\''s AES-CBC suites). Default\: \$SSLKEYLOGFILE when it is set. The secrets are never written to any output]:FILE:_files' \
'--tls-keylog=[An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write)\: TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2'\''s AES-CBC suites). Default\: \$SSLKEYLOGFILE when it is set. The secrets are never written to any output]:FILE:_files' \
'--max-buffer-per-direction=[Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)]:BYTES:_default' \
'--max-buffer-total=[Out-of-order bytes held over all connections]:BYTES:_default' \
'--max-connections=[Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported]:N:_default' \
'--idle-timeout=[Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)]:SECS:_default' \
'--threads=[analyze\: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default\: the cores the machine has. (The http and flows views run on one thread.)]:N:_default' \
'*--tunnel=[Read UDP datagrams to PORT as a tunnel (repeatable)\: udp\:PORT=vxlan or udp\:PORT=geneve, e.g. udp\:8472=vxlan (the VXLAN port of the Linux kernel'\''s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses]:udp:PORT=KIND:_default' \
'--show-secrets[Show credentials instead of redacting them. By default every output redacts the value of every name that announces a credential, by one rule wherever the name is (a header, a query, fragment or path parameter, a JSON member)\: names holding token, secret, password, passphrase, credential, signature, cookie, auth or jsessionid, or ending in key after another word (api_key, access_key, X-Api-Key); identifiers (Mcp-Session-Id, session_id, Last-Event-ID), Idempotency-Key and progressToken are kept. Also a URL'\''s userinfo password, and tokens of a known shape anywhere (sk-..., sk_live_..., ghp_..., github_pat_..., glpat-..., xoxb-..., AIza..., AKIA... and the secret access key next to it, JWTs, Bearer tokens), keeping their prefix and length]' \
'--keep-duplicates[Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them\: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender'\''s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::files -- Capture files (pcap or pcapng), HAR files or JSON Lines access logs (nginx, Envoy, Caddy), each optionally gzip-compressed; the format is detected from the content. - reads standard input, recognised the same way:_default' \
&& ret=0
;;
(analyze)
_arguments "${_arguments_options[@]}" : \
'-o+[Write the report to FILE instead of standard output (created, or truncated); warnings and the progress bar stay on standard error, and the report is not coloured unless --color always]:FILE:_files' \
'--output=[Write the report to FILE instead of standard output (created, or truncated); warnings and the progress bar stay on standard error, and the report is not coloured unless --color always]:FILE:_files' \
'--write-pcap=[After the report, write into DIR (created if need be) one capture per session shown, S1.pcap, holding every frame of the TCP connections that carried its streams, unchanged (time, bytes, link type). With several capture inputs, one per input\: S1.I2.pcap. A pcapng input gives .pcapng files. HAR files and logs have no frames and are passed over. The inputs are read a second time\: standard input and FIFOs are refused]:DIR:_files' \
'-f+[Output format (by default the table, or what the --output file'\''s extension names\: .json, .ndjson, .md, .html)]:FORMAT:((table\:"Sessions, findings and the incident timeline, for people"
json\:"One JSON document (schema_version 1, see docs/report-format.md)"
ndjson\:"One JSON record per line (input, session, finding, timeline, event, summary)"
markdown\:"For a postmortem\: the verdict, sessions, findings (with Wireshark filters), a Mermaid sequence diagram and the timeline of each incident, as Markdown"
html\:"One self-contained HTML file\: a swimlane view per incident (a lane per stream, the fallback, drop, resume and replay drawn across lanes) and the findings with their evidence"))' \
'--format=[Output format (by default the table, or what the --output file'\''s extension names\: .json, .ndjson, .md, .html)]:FORMAT:((table\:"Sessions, findings and the incident timeline, for people"
json\:"One JSON document (schema_version 1, see docs/report-format.md)"
ndjson\:"One JSON record per line (input, session, finding, timeline, event, summary)"
markdown\:"For a postmortem\: the verdict, sessions, findings (with Wireshark filters), a Mermaid sequence diagram and the timeline of each incident, as Markdown"
html\:"One self-contained HTML file\: a swimlane view per incident (a lane per stream, the fallback, drop, resume and replay drawn across lanes) and the findings with their evidence"))' \
'--live-flush=[On a live pipe written as NDJSON, a session quiet for SECS (capture time) is reported as it stands, an \`interim\` record with what its own detectors find so far, without waiting for its end; again if it goes on and falls quiet again; finally when it ends]:SECS:_default' \
'*-s+[Only this session (S1, S2... or an Mcp-Session-Id, whole or as the table shortens it\: 2665…92a9); repeatable. One that names no session is an error]:SESSION:_default' \
'*--session=[Only this session (S1, S2... or an Mcp-Session-Id, whole or as the table shortens it\: 2665…92a9); repeatable. One that names no session is an error]:SESSION:_default' \
'--since=[Only what happened at or after this time\: RFC 3339 (2026-11-02T12\:00\:00Z), or a time of day in UTC as the timeline prints it (04\:36\:14.297), on each session'\''s date]:TIME:_default' \
'--until=[Only what happened at or before this time (as --since)]:TIME:_default' \
'-m+[Hide findings below this severity]:SEVERITY:(critical high medium low info)' \
'--min-severity=[Hide findings below this severity]:SEVERITY:(critical high medium low info)' \
'--fail-on=[Exit with status 1 when a finding is at or above this severity]:SEVERITY:(critical high medium low info)' \
'*--server=[Treat this endpoint as an MCP server when telling client from server (an address, a port, or address\:port); repeatable. Needed only when a capture starts mid-connection on unusual ports]:ADDR|PORT:_default' \
'--color=[When to colour the terminal report (auto\: on a terminal, unless NO_COLOR is set)]:COLOR:((auto\:"Colour when standard output is a terminal and NO_COLOR is not set"
always\:""
never\:""))' \
'--progress=[When to show a progress bar on standard error (auto\: when it is a terminal), whatever the colour; always on a standard error that is no terminal (a log) writes a plain line every two seconds instead]:PROGRESS:(auto always never)' \
'--input-format=[How to read every FILE\: auto detects it from the content (pcap/pcapng magic, a HAR'\''s log.entries, the keys of a JSON log'\''s first line)]:FORMAT:((auto\:"Detect from the content"
pcap\:"A packet capture (pcap or pcapng)"
har\:"A HAR file"
log\:"A JSON Lines access log"))' \
'--log-map=[Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as key=FIELD,... or a JSON file (or inline object) of the same keys. Keys\: time (end of the request) or start, method, path, status, duration, duration_unit (s, ms, us, ns), req.HEADER and resp.HEADER (a field holding that header), request_headers and response_headers (a field holding an object of headers), client, connection. Nested fields as a.b. Applies to every JSON Lines input]:MAP:_default' \
'(--log-map)--log-format=[The nginx log_format of a text access log (\`combined\`, or the format string with extra quoted fields such as "\$http_mcp_session_id" "\$sent_http_mcp_session_id" "\$http_last_event_id")\: every input that is not a capture is read as lines in it]:FORMAT:_default' \
'-k+[An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write)\: TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2'\''s AES-CBC suites). Default\: \$SSLKEYLOGFILE when it is set. The secrets are never written to any output]:FILE:_files' \
'--tls-keylog=[An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write)\: TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2'\''s AES-CBC suites). Default\: \$SSLKEYLOGFILE when it is set. The secrets are never written to any output]:FILE:_files' \
'--max-session-events=[SSE events one session holds for analysis (about 300 bytes each while it is analysed); past it events are counted, not held, and findings that rest on an event'\''s absence (unanswered_request, skipped_events, resume_gap) are reported as not determinable for that session]:N:_default' \
'--max-session-exchanges=[Exchanges one session holds for analysis (about a kilobyte each); past it exchanges are counted, not held, and findings that rest on an answer'\''s or event'\''s absence are reported as not determinable for that session]:N:_default' \
'--max-held-events=[SSE events the sessions seen in several inputs may hold together while they wait for their other observations to end (for the hop comparison); past it the oldest are reported at once and compared with what is kept of them]:N:_default' \
'--max-buffer-per-direction=[Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)]:BYTES:_default' \
'--max-buffer-total=[Out-of-order bytes held over all connections]:BYTES:_default' \
'--max-connections=[Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported]:N:_default' \
'--idle-timeout=[Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)]:SECS:_default' \
'--threads=[analyze\: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default\: the cores the machine has. (The http and flows views run on one thread.)]:N:_default' \
'*--tunnel=[Read UDP datagrams to PORT as a tunnel (repeatable)\: udp\:PORT=vxlan or udp\:PORT=geneve, e.g. udp\:8472=vxlan (the VXLAN port of the Linux kernel'\''s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses]:udp:PORT=KIND:_default' \
'--write-pcap-per-finding[With --write-pcap, also one capture per finding shown, F4.pcap, holding exactly the frames it cites (at every vantage point)]' \
'-e[Add every SSE event (session, stream, namespace, ID, time, frame, JSON-RPC summary) to the JSON and NDJSON reports]' \
'--events[Add every SSE event (session, stream, namespace, ID, time, frame, JSON-RPC summary) to the JSON and NDJSON reports]' \
'--all-events[Show every event in the timeline instead of condensed runs]' \
'-a[Print the timeline of every session, those without findings too (the table prints the timelines of incidents, and of the sessions --session names)]' \
'--all[Print the timeline of every session, those without findings too (the table prints the timelines of incidents, and of the sessions --session names)]' \
'-p[Add the call profile to the table\: per server and per tool or method, the calls, errors (JSON-RPC codes, isError results, HTTP statuses), those with no answer, and latency p50/p95/p99/max. The JSON and NDJSON reports always have it]' \
'--profile[Add the call profile to the table\: per server and per tool or method, the calls, errors (JSON-RPC codes, isError results, HTTP statuses), those with no answer, and latency p50/p95/p99/max. The JSON and NDJSON reports always have it]' \
'--no-pager[Write the table straight to the terminal. Without it, a table taller than the terminal is shown in a pager (\$PAGER, else \`less -FRX\`, as git does), so it opens on the verdict]' \
'--examine-all[Examine every connection whole. Without it, a connection whose first bytes show it does not carry MCP (TLS without keys, not HTTP, a first request that cannot be MCP) is set aside, its bytes counted and not parsed, unless it shows MCP later (docs/classification.md)]' \
'--show-secrets[Show credentials instead of redacting them. By default every output redacts the value of every name that announces a credential, by one rule wherever the name is (a header, a query, fragment or path parameter, a JSON member)\: names holding token, secret, password, passphrase, credential, signature, cookie, auth or jsessionid, or ending in key after another word (api_key, access_key, X-Api-Key); identifiers (Mcp-Session-Id, session_id, Last-Event-ID), Idempotency-Key and progressToken are kept. Also a URL'\''s userinfo password, and tokens of a known shape anywhere (sk-..., sk_live_..., ghp_..., github_pat_..., glpat-..., xoxb-..., AIza..., AKIA... and the secret access key next to it, JWTs, Bearer tokens), keeping their prefix and length]' \
'-q[No progress bar (as --progress never)]' \
'--quiet[No progress bar (as --progress never)]' \
'--keep-duplicates[Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them\: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender'\''s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::files -- Captures (pcap or pcapng), HAR files or JSON Lines access logs (nginx, Envoy, Caddy, HAProxy, Traefik), optionally gzip-compressed, detected by content; - reads standard input, recognised the same way. Several inputs form one report\: sessions are matched across them by session ID and server:_default' \
&& ret=0
;;
(extract)
_arguments "${_arguments_options[@]}" : \
'-o+[Where the records go\: a directory (created if need be), which gets FIRST-INPUT.records.ndjson, or a file path ending in .ndjson]:DIR:_files' \
'--output=[Where the records go\: a directory (created if need be), which gets FIRST-INPUT.records.ndjson, or a file path ending in .ndjson]:DIR:_files' \
'--input-format=[How to read every FILE\: auto detects it from the content (pcap/pcapng magic, a HAR'\''s log.entries, the keys of a JSON log'\''s first line)]:FORMAT:((auto\:"Detect from the content"
pcap\:"A packet capture (pcap or pcapng)"
har\:"A HAR file"
log\:"A JSON Lines access log"))' \
'--log-map=[Field names of a JSON Lines access log that is not nginx, Envoy, Caddy, HAProxy or Traefik, as key=FIELD,... or a JSON file (or inline object) of the same keys. Keys\: time (end of the request) or start, method, path, status, duration, duration_unit (s, ms, us, ns), req.HEADER and resp.HEADER (a field holding that header), request_headers and response_headers (a field holding an object of headers), client, connection. Nested fields as a.b. Applies to every JSON Lines input]:MAP:_default' \
'(--log-map)--log-format=[The nginx log_format of a text access log (\`combined\`, or the format string with extra quoted fields such as "\$http_mcp_session_id" "\$sent_http_mcp_session_id" "\$http_last_event_id")\: every input that is not a capture is read as lines in it]:FORMAT:_default' \
'-k+[An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write)\: TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2'\''s AES-CBC suites). Default\: \$SSLKEYLOGFILE when it is set. The secrets are never written to any output]:FILE:_files' \
'--tls-keylog=[An NSS key log (what SSLKEYLOGFILE makes curl, browsers, httpx and Node write)\: TLS 1.2 and 1.3 connections it has secrets for are decrypted and analysed (AES-GCM, ChaCha20-Poly1305, and TLS 1.2'\''s AES-CBC suites). Default\: \$SSLKEYLOGFILE when it is set. The secrets are never written to any output]:FILE:_files' \
'--max-buffer-per-direction=[Out-of-order bytes held for one direction of a connection before the hole is declared lost (a gap)]:BYTES:_default' \
'--max-buffer-total=[Out-of-order bytes held over all connections]:BYTES:_default' \
'--max-connections=[Connections tracked at once; past it the least recently active is evicted (half-open ones first), counted and reported]:N:_default' \
'--idle-timeout=[Seconds of capture time after which a silent connection is closed and forgotten (at most 100 years)]:SECS:_default' \
'--threads=[analyze\: cores to use. Packets and TCP are read on one thread; TLS, HTTP, SSE and JSON-RPC run in 8 shards by connection, fed by N-1 workers (at most 8, and no more than the cores the machine has less one); sessions, detectors and JSON records each have a thread of their own. 1 runs everything on one thread. The report is the same byte for byte whatever N. Default\: the cores the machine has. (The http and flows views run on one thread.)]:N:_default' \
'*--tunnel=[Read UDP datagrams to PORT as a tunnel (repeatable)\: udp\:PORT=vxlan or udp\:PORT=geneve, e.g. udp\:8472=vxlan (the VXLAN port of the Linux kernel'\''s default and of flannel). Without it, VXLAN on UDP 4789, Geneve on 6081, GRE (IP, Ethernet, ERSPAN I, II and III), IP in IP, 6in4 and MPLS are unwrapped, and the TCP inside is analysed by its own addresses]:udp:PORT=KIND:_default' \
'--show-secrets[Write credentials into the records as they were sent (see analyze --show-secrets)]' \
'--examine-all[Examine every connection whole (see analyze --examine-all)]' \
'-q[No progress bar]' \
'--quiet[No progress bar]' \
'--keep-duplicates[Keep duplicate frames. Without it a TCP frame whose IP packet is byte for byte (IP ID and TTL included) that of one of the 4 TCP frames before it, at most 1 ms apart, is removed and counted, as editcap -d removes them\: the second copy a SPAN port mirroring both directions delivers, or one packet captured on two interfaces. A sender'\''s retransmission is never the same bytes so soon (a new IP ID, a timer of 10 ms or more)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::files -- Captures (pcap or pcapng), HAR files or JSON Lines access logs, as `analyze` reads them. They are read as one run\: captures merged by time, a connection followed across the files of a rotated capture:_default' \
&& ret=0
;;
(report)
_arguments "${_arguments_options[@]}" : \
'--format=[How to render it]:FORMAT:((table\:"The terminal report"
markdown\:"The postmortem Markdown of \`analyze --format markdown\`"
html\:"The self-contained HTML of \`analyze --format html\`"))' \
'--color=[Colour in the terminal report]:COLOR:((auto\:"Colour when standard output is a terminal and NO_COLOR is not set"
always\:""
never\:""))' \
'--no-pager[Write the table straight to the terminal, never through a pager (as analyze)]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
':file -- A report written by `analyze --format json` or `--format ndjson` (`-` for standard input):_default' \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'::kind -- A finding kind, e.g. cross_namespace_replay:_default' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_mcp-forensics__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:mcp-forensics-help-command-$line[1]:"
        case $line[1] in
            (flows)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(http)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(analyze)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(extract)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(report)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
}

(( $+functions[_mcp-forensics_commands] )) ||
_mcp-forensics_commands() {
    local commands; commands=(
'flows:List the TCP connections of captures with their reassembly health' \
'http:List the HTTP/1.1 exchanges of captures, HAR files and JSON access logs, with SSE events and JSON-RPC messages' \
'analyze:Rebuild MCP sessions and report what went wrong\: the incident timeline' \
'extract:Write the exchange records of captures, HAR files and logs, for \`analyze\` elsewhere' \
'report:Render a saved report again, without the capture' \
'explain:Explain a finding kind\: what it means, why it matters, what to change' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'mcp-forensics commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__analyze_commands] )) ||
_mcp-forensics__subcmd__analyze_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics analyze commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__explain_commands] )) ||
_mcp-forensics__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics explain commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__extract_commands] )) ||
_mcp-forensics__subcmd__extract_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics extract commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__flows_commands] )) ||
_mcp-forensics__subcmd__flows_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics flows commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help_commands] )) ||
_mcp-forensics__subcmd__help_commands() {
    local commands; commands=(
'flows:List the TCP connections of captures with their reassembly health' \
'http:List the HTTP/1.1 exchanges of captures, HAR files and JSON access logs, with SSE events and JSON-RPC messages' \
'analyze:Rebuild MCP sessions and report what went wrong\: the incident timeline' \
'extract:Write the exchange records of captures, HAR files and logs, for \`analyze\` elsewhere' \
'report:Render a saved report again, without the capture' \
'explain:Explain a finding kind\: what it means, why it matters, what to change' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'mcp-forensics help commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__analyze_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__analyze_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help analyze commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__explain_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help explain commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__extract_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__extract_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help extract commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__flows_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__flows_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help flows commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__help_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help help commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__http_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__http_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help http commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__help__subcmd__report_commands] )) ||
_mcp-forensics__subcmd__help__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics help report commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__http_commands] )) ||
_mcp-forensics__subcmd__http_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics http commands' commands "$@"
}
(( $+functions[_mcp-forensics__subcmd__report_commands] )) ||
_mcp-forensics__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'mcp-forensics report commands' commands "$@"
}

if [ "$funcstack[1]" = "_mcp-forensics" ]; then
    _mcp-forensics "$@"
else
    compdef _mcp-forensics mcp-forensics
fi
