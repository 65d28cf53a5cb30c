# Shared helpers for the samples/make/*.sh capture scripts (sourced, not run).
# Loopback only. Everything installed goes to ${MCPF_SCRATCH:-/tmp/mcpf-scratch}.
set -euo pipefail

MAKE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SAMPLES_DIR="$(dirname "$MAKE_DIR")"
SCRATCH="${MCPF_SCRATCH:-/tmp/mcpf-scratch}"
mkdir -p "$SCRATCH"

# Pinned SDK versions (the newest that installed here).
MCPF_PY_MCP_VERSION="2.3.0"
MCPF_TS_SDK_VERSION="1.32.2"

_MCPF_PIDS=()
_mcpf_cleanup() {
  local p
  for p in "${_MCPF_PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
}
trap _mcpf_cleanup EXIT

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# need_apt BINARY:PACKAGE ... : apt-get install what is missing (Debian 12, root).
_MCPF_APT_UPDATED=0
need_apt() {
  local missing=() spec bin pkg
  for spec in "$@"; do
    bin="${spec%%:*}"; pkg="${spec#*:}"
    command -v "$bin" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  need_apt_pkg "${missing[@]}"
}

need_apt_pkg() {
  if [ "$_MCPF_APT_UPDATED" = 0 ]; then apt-get update -qq; _MCPF_APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

need_capture_tools() { need_apt tcpdump:tcpdump tshark:tshark editcap:wireshark-common; }

# py_venv NAME REQUIREMENTS_FILE -> echoes the venv's python (system python3 + venv).
py_venv() {
  local name="$1" req="$2" dir="$SCRATCH/$1" stamp
  need_apt python3:python3
  stamp="$(sha256sum "$req" | cut -c1-16)"
  if [ ! -f "$dir/.stamp-$stamp" ]; then
    log "creating venv $dir"
    rm -rf "$dir"
    if ! /usr/bin/python3 -m venv "$dir" >/dev/null 2>&1; then
      rm -rf "$dir"; _MCPF_APT_UPDATED=0; need_apt_pkg python3-venv
      /usr/bin/python3 -m venv "$dir"
    fi
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
    touch "$dir/.stamp-$stamp"
  fi
  echo "$dir/bin/python"
}

# node_deps NAME : npm ci of samples/make/_node (pinned TS SDK) into $SCRATCH/node-mcp-sdk-VER,
# copies _node/*.mjs there and samples/make/NAME/*.mjs into a subfolder of it, echoes that subfolder.
node_deps() {
  local name="$1" src="$MAKE_DIR/_node" dir="$SCRATCH/node-mcp-sdk-$MCPF_TS_SDK_VERSION" stamp
  need_apt node:nodejs npm:npm
  stamp="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)"
  mkdir -p "$dir"
  if [ ! -f "$dir/.stamp-$stamp" ]; then
    log "npm ci in $dir"
    rm -rf "$dir/node_modules"
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --silent) >&2
    touch "$dir/.stamp-$stamp"
  fi
  cp "$src"/*.mjs "$dir/"
  mkdir -p "$dir/$name"
  cp "$MAKE_DIR/$name"/*.mjs "$dir/$name/"
  echo "$dir/$name"
}

# throwaway_cert DIR : a P-256 key and a self-signed certificate for localhost, DIR/ec.key and
# DIR/ec.crt, valid two days: for captures whose key logs are committed.
throwaway_cert() {
  need_apt openssl:openssl
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1/ec.key" \
    -out "$1/ec.crt" -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost 2>/dev/null
}

# nginx_conf WORK SERVERS : WORK/nginx.conf for an nginx in the foreground whose files are all
# under WORK (WORK/tmp must exist), with the server blocks SERVERS.
nginx_conf() {
  cat > "$1/nginx.conf" <<CONF
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events {}
http {
  access_log $1/access.log;
  client_body_temp_path $1/tmp;
  proxy_temp_path $1/tmp;
$2
}
CONF
}

# mcp_location PORT : a `location /mcp` handing requests to the MCP server on 127.0.0.1:PORT as
# the SDK servers need: HTTP/1.1 upstream, nothing buffered.
mcp_location() {
  cat <<LOC
    location /mcp {
      proxy_pass http://127.0.0.1:$1;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 60s;
    }
LOC
}

# wait_listen PORT : wait until something LISTENs on 127.0.0.1:PORT, without connecting.
wait_listen() {
  local hex i; hex="$(printf '%04X' "$1")"
  for i in $(seq 1 200); do
    grep -q "^ *[0-9]*: 0100007F:$hex 00000000:0000 0A" /proc/net/tcp && return 0
    sleep 0.05
  done
  echo "nothing listens on port $1" >&2; exit 1
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

require_free_port() {
  local p
  for p in "$@"; do
    port_free "$p" || { echo "port $p is in use; stop whatever listens there" >&2; exit 1; }
  done
}

# bg VAR CMD... : start CMD in the background, store its pid in VAR (killed on exit).
bg() { local __var="$1"; shift; "$@" & printf -v "$__var" '%s' "$!"; _MCPF_PIDS+=("$!"); }

# capture_start IFACE FILTER OUTFILE -> sets CAPTURE_PID (last started capture).
capture_start() {
  local iface="$1" filter="$2" out="$3" errf
  errf="$(mktemp "$SCRATCH/tcpdump.XXXXXX")"
  rm -f "$out"
  tcpdump -i "$iface" -U -s 0 -Z root -w "$out" "$filter" 2>"$errf" &
  CAPTURE_PID=$!
  _MCPF_PIDS+=("$CAPTURE_PID")
  local i
  for i in $(seq 1 100); do
    grep -q "listening on" "$errf" && break
    sleep 0.05
  done
  grep -q "listening on" "$errf" || { cat "$errf" >&2; exit 1; }
  sleep 0.2
}

# capture_stop PID : SIGINT about a second after the traffic ended.
capture_stop() {
  sleep 1
  kill -INT "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# tshark_counts FILE PORT : the oracle counts used in samples/README.md.
# Messages are counted per HTTP message (a frame can carry two pipelined requests).
_tc() { tshark -r "$1" "${@:2}" 2>/dev/null | tr ',' '\n' | grep -c . || true; }
tshark_counts() {
  local f="$1" port="$2" dec=()
  [ -n "$port" ] && dec=(-d "tcp.port==$port,http")
  local req resp resph streams
  req=$(_tc "$f" "${dec[@]}" -Y http.request -T fields -e http.request.method)
  resp=$(_tc "$f" "${dec[@]}" -Y http.response -T fields -e http.response.code)
  resph=$(_tc "$f" "${dec[@]}" -o http.desegment_body:FALSE -Y http.response -T fields -e http.response.code)
  streams=$(tshark -r "$f" -T fields -e tcp.stream 2>/dev/null | sort -u | wc -l)
  echo "$(basename "$f"): http.request=$req http.response=$resp (desegment_body:FALSE: $resph) tcp.streams=$streams size=$(stat -c %s "$f")B"
}

# --- the seed incident behind its buffering nginx (for the scripts that put a proxy or recorder
# in front of it). They need NAME and WORK set; nginx is Debian's.

# seed_nginx_conf LISTEN UPSTREAM OUT [SED_EXPR]: make/seed-incident/nginx.conf listening on
# LISTEN, proxying to UPSTREAM, with SED_EXPR (if any) applied too; checked, so a changed conf
# fails loudly instead of running on the wrong ports.
seed_nginx_conf() {
  local listen="$1" upstream="$2" out="$3" extra="${4:-}"
  sed -e "s/127\.0\.0\.1:8080/127.0.0.1:$listen/" -e "s/127\.0\.0\.1:9000/127.0.0.1:$upstream/" \
      ${extra:+-e "$extra"} "$MAKE_DIR/seed-incident/nginx.conf" >"$out"
  grep -q "listen 127.0.0.1:$listen;" "$out" && grep -q "server 127.0.0.1:$upstream;" "$out" \
    || { log "could not rewrite the ports of seed-incident/nginx.conf"; exit 1; }
}

# run_nginx DIR CONF PORT: nginx in the foreground with its own prefix DIR; its pid in NGINX_PID.
run_nginx() {
  mkdir -p "$1/tmp"
  "$(command -v nginx || echo /usr/sbin/nginx)" -p "$1/" -e "$1/error.log" -c "$2" &
  NGINX_PID=$!; _MCPF_PIDS+=("$NGINX_PID")
  wait_listen "$3"
}
stop_nginx() { kill -QUIT "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; }

# start_seed_server PORT: seed-server in buggy mode, its session IDs seeded by SEED_NAME or NAME (the
# same IDs at every run), its truth in $WORK/seed-server.json; its pid in SEED_SERVER.
start_seed_server() {
  /usr/bin/python3 "$MAKE_DIR/seed-incident/server.py" --port "$1" --session-seed "mcp-forensics/${SEED_NAME:-$NAME}" \
      --truth-out "$WORK/seed-server.json" >"$WORK/seed-server.out" 2>"$WORK/seed-server.err" &
  SEED_SERVER=$!; _MCPF_PIDS+=("$SEED_SERVER")
  wait_listen "$1"
}

# start_seed_behind_nginx NGINX_PORT SEED_PORT: seed-server, and the buffering nginx in front of it.
start_seed_behind_nginx() {
  seed_nginx_conf "$1" "$2" "$WORK/nginx.conf"
  start_seed_server "$2"
  run_nginx "$WORK/nginx" "$WORK/nginx.conf" "$1"
}
stop_seed_behind_nginx() { stop_nginx; stop_pid "$SEED_SERVER"; }

# run_seed_client PORT: seed-client against 127.0.0.1:PORT, its truth in $WORK/seed-client.json.
run_seed_client() {
  /usr/bin/python3 "$MAKE_DIR/seed-incident/client.py" --port "$1" --truth-out "$WORK/seed-client.json" \
      2>"$WORK/seed-client.err" || { log "seed-client failed"; tail -20 "$WORK/seed-client.err" >&2; exit 1; }
}

# --- a healthy session of the official Python SDKs (make/python-sdk-healthy/), for the scripts that
# put a proxy between them. They need PY (the SDK venv's python) and WORK.

# start_sdk_server PORT: the SDK server, its event store's log in $WORK/sdk-events.jsonl; pid in SDK_SERVER.
start_sdk_server() {
  (cd "$MAKE_DIR/python-sdk-healthy" && exec "$PY" server.py "$1" "$WORK/sdk-events.jsonl") \
      >"$WORK/sdk-server.log" 2>&1 &
  SDK_SERVER=$!; _MCPF_PIDS+=("$SDK_SERVER")
  wait_listen "$1"
}

# run_sdk_client URL: the SDK client's session against URL, its record in $WORK/sdk-client.jsonl.
run_sdk_client() {
  (cd "$MAKE_DIR/python-sdk-healthy" && "$PY" client.py "$1" "$WORK/sdk-client.jsonl") \
      >"$WORK/sdk-client.log" 2>&1 || { log "SDK client failed"; tail -20 "$WORK/sdk-client.log" >&2; exit 1; }
}

# --- the seed incident among many concurrent sessions of the official Python SDK client
# (make/concurrent-nginx/py_clients.py and make/_py/py_server.py, one event store per session), all
# from 127.0.0.1: what a proxy in front of many clients records. They need PY and WORK.

# start_many_sdk_server PORT: the SDK server, its log in $WORK/py-server.jsonl; pid in MANY_SERVER.
start_many_sdk_server() {
  (cd "$MAKE_DIR/_py" && exec "$PY" py_server.py "$1" "$WORK/py-server.jsonl") >"$WORK/many-server.log" 2>&1 &
  MANY_SERVER=$!; _MCPF_PIDS+=("$MANY_SERVER")
  wait_listen "$1"
}

# seed_among_many_sdk_sessions SDK_URL SEED_PORT N: N SDK sessions against SDK_URL (0.12 s apart)
# and, two seconds after they start (when every session is open), the seed-client against 127.0.0.1:SEED_PORT (seed_wrap.py: it
# also records each request's time and local port); waits for all of them. Records in
# $WORK/py-clients.jsonl and $WORK/seed-client.json.
seed_among_many_sdk_sessions() {
  "$PY" "$MAKE_DIR/concurrent-nginx/py_clients.py" "$1" "$3" 0.12 "$WORK/py-clients.jsonl" \
      >"$WORK/py-clients.log" 2>&1 &
  local clients=$!
  sleep 2.0
  /usr/bin/python3 "$MAKE_DIR/concurrent-nginx/seed_wrap.py" client --port "$2" \
      --truth-out "$WORK/seed-client.json" 2>"$WORK/seed-client.err" \
    || { log "seed-client failed"; tail -20 "$WORK/seed-client.err" >&2; exit 1; }
  wait "$clients" || { log "the SDK clients failed"; tail -20 "$WORK/py-clients.log" >&2; exit 1; }
}
