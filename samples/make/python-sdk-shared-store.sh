#!/usr/bin/env bash
# Re-creates samples/python-sdk-shared-store.pcap (clients <-> relay, port 18211),
# samples/python-sdk-shared-store-server-leg.pcap (relay <-> server, port 18212) and
# samples/python-sdk-shared-store.truth.json: make/python-sdk-resume-many.sh (run here as its
# shared-store variant) with 6 sessions and the
# server's ONE event store shared by every session, as the official Python SDK's session manager
# does when it is given a store (make/_py/py_server.py shared-store). Its streams are keyed by stream
# id alone (every standalone stream is `_GET_stream`, a POST stream its request id), so a session's
# resume replays the events other sessions' streams of the same name got after its Last-Event-ID:
# the events of one session delivered to another.
#
#   6 concurrent official Python SDK client sessions (make/python-sdk-resume-many/clients.py)
#     -> relay (make/python-sdk-resume-many/relay.py: resets some GET streams after 3 events, some
#        POST streams after 2) -> official Python SDK server (MCPServer), one shared event store
#
# Needs root (tcpdump on lo, apt-get). Uses TCP ports 18211 and 18212 only.
# Scratch: ${MCPF_SCRATCH:-/tmp/mcpf-scratch}. Takes about 15 s (plus installs on a fresh machine).
MCPF_VARIANT=shared-store exec bash "$(dirname "$0")/python-sdk-resume-many.sh"
