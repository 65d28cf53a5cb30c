#!/usr/bin/env bash
# Negative control for the seed incident: the same run with a correct server
# (namespaced event ids post:N / sse:N, resume from the named namespace).
#   -> samples/namespaced-ids{-client-leg.pcap,-server-leg.pcap,.nginx.jsonl,.truth.json}
exec "$(dirname "${BASH_SOURCE[0]}")/seed-incident.sh" --namespaced "$@"
