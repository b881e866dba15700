#!/usr/bin/env bash
# Attention Lab for a class on one box: N app processes behind nginx, in the foreground.
#
#   bash deploy/serve.sh [--workers N] [--port P] [--address A] [--run-dir DIR] [--timeout S]
#                        [--metrics-port M]
#
# Starts N `streamlit run app/Home.py` processes on free loopback ports and Debian's nginx
# (unprivileged, from deploy/nginx.conf.template) on A:P in front of them: a route cookie
# keeps each browser on one process, websockets are upgraded, every process is
# health-checked before the URL is printed. Ctrl+C or SIGTERM stops every child. An app
# process that dies is restarted (up to 5 times). See deploy/README.md.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HERE="$ROOT/deploy"
MAX_RESTARTS=5

usage() {
    cat <<EOF
usage: bash deploy/serve.sh [--workers N] [--port P] [--address A] [--run-dir DIR] [--timeout S]
                            [--metrics-port M]

  --workers N    app processes (default: the number of cores, here $(nproc 2>/dev/null || echo 1))
  --port P       port nginx listens on (default 8501)
  --address A    address nginx listens on (default 127.0.0.1; 0.0.0.0 for a classroom network)
  --run-dir DIR  keep nginx's config, pid, temp files and all logs in DIR (kept on exit);
                 default: a fresh temporary directory, removed on exit
  --timeout S    seconds to wait for the processes to become healthy (default 180)
  --metrics-port M  serve the admin's figures as Prometheus metrics on 127.0.0.1:M/metrics
                 (python -m attention_lab.serving.metrics; default: off; see README "The admin's view")

Environment: PYTHON (interpreter with the app installed), NGINX (nginx binary),
ATTENTION_LAB_TORCH_THREADS (torch threads per process, default 1), and any
ATTENTION_LAB_* / STREAMLIT_* setting, passed on to every app process.
EOF
}

die() {
    echo "serve.sh: error: $*" >&2
    exit 2
}

APPS="$(nproc 2>/dev/null || echo 1)"
PORT=8501
ADDRESS=127.0.0.1
RUN_DIR=""
TIMEOUT=180
METRICS_PORT=""
while (($#)); do
    case "$1" in
    --workers | --port | --address | --run-dir | --timeout | --metrics-port)
        (($# >= 2)) || die "$1 needs a value (see --help)"
        case "$1" in
        --workers) APPS="$2" ;;
        --port) PORT="$2" ;;
        --address) ADDRESS="$2" ;;
        --run-dir) RUN_DIR="$2" ;;
        --timeout) TIMEOUT="$2" ;;
        --metrics-port) METRICS_PORT="$2" ;;
        esac
        shift 2
        ;;
    --workers=* | --port=* | --address=* | --run-dir=* | --timeout=* | --metrics-port=*)
        set -- "${1%%=*}" "${1#*=}" "${@:2}"
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[[ "$APPS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive whole number, got '$APPS'"
[[ "$PORT" =~ ^[0-9]+$ ]] && ((PORT >= 1 && PORT <= 65535)) || die "--port must be 1-65535, got '$PORT'"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive number of seconds, got '$TIMEOUT'"
[[ -n "$ADDRESS" ]] || die "--address must not be empty"
[[ -z "$METRICS_PORT" ]] || { [[ "$METRICS_PORT" =~ ^[0-9]+$ ]] && ((METRICS_PORT >= 1 && METRICS_PORT <= 65535 &&
    METRICS_PORT != PORT)); } || die "--metrics-port must be 1-65535 and not --port, got '$METRICS_PORT'"

# ------------------------------------------------------------------ what we need
if [[ -n "${NGINX:-}" ]]; then
    [[ -x "$NGINX" ]] || die "NGINX=$NGINX is not an executable file. Unset NGINX to use nginx from PATH."
else
    NGINX="$(command -v nginx || true)"
    if [[ -z "$NGINX" && -x /usr/sbin/nginx ]]; then
        die "nginx is installed as /usr/sbin/nginx, but /usr/sbin is not on your PATH.
  Run:  PATH=\"\$PATH:/usr/sbin\" bash deploy/serve.sh ...   (or set NGINX=/usr/sbin/nginx)"
    fi
    [[ -n "$NGINX" ]] || die "nginx is not installed (no nginx on PATH).
  Install Debian's package:  sudo apt-get install -y nginx
  (serve.sh runs it unprivileged from its own config; the system service is not needed:
  sudo systemctl disable --now nginx). Or serve one process without nginx:  streamlit run app/Home.py"
fi
if [[ -z "${PYTHON:-}" ]]; then
    PYTHON="$(command -v python3 || command -v python || true)"
    [[ -n "$PYTHON" ]] || die "no python3 on PATH; set PYTHON=/path/to/python (the one with the app installed)"
fi
command -v setsid >/dev/null || die "setsid (util-linux) is missing: apt-get install -y util-linux"
[[ -f "$HERE/nginx.conf.template" ]] || die "missing $HERE/nginx.conf.template"

cd "$ROOT" || die "cannot enter $ROOT"
PREFLIGHT="$("$PYTHON" "$HERE/serve_support.py" preflight --address "$ADDRESS" --port "$PORT" \
    --workers "$APPS")" || exit 2
eval "$PREFLIGHT" # APP_PORTS, MAX_UPLOAD_MB, COOKIE_SECRET
read -r -a PORTS <<<"$APP_PORTS"

KEEP_RUN_DIR=1
if [[ -z "$RUN_DIR" ]]; then
    RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/attention-lab-serve.XXXXXX")" || die "cannot create a temporary directory"
    KEEP_RUN_DIR=0
fi
mkdir -p "$RUN_DIR/logs" "$RUN_DIR/tmp" || die "cannot create $RUN_DIR/logs and $RUN_DIR/tmp"
RUN_DIR="$(cd "$RUN_DIR" && pwd)"

# ------------------------------------------------------------------ stopping
NGINX_PID=""
METRICS_PID=""
STATIC_DIR=""
declare -a APP_PIDS=()
declare -a RESTARTS=()
STOPPING=0

alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

stop_all() {
    ((STOPPING)) && return
    STOPPING=1
    trap '' INT TERM HUP
    local pid pids=()
    for pid in "$NGINX_PID" "$METRICS_PID" "${APP_PIDS[@]}"; do
        # Each child leads its own process group: the signal reaches its children too.
        alive "$pid" && kill -TERM -- "-$pid" 2>/dev/null && pids+=("$pid")
    done
    local deadline=$((SECONDS + 15))
    for pid in "${pids[@]}"; do
        while kill -0 -- "-$pid" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 0.1
        done
    done
    for pid in "${pids[@]}"; do
        if kill -0 -- "-$pid" 2>/dev/null; then
            echo "serve.sh: process group $pid did not stop within 15 s; killing it" >&2
            kill -KILL -- "-$pid" 2>/dev/null
        fi
        wait "$pid" 2>/dev/null
    done
    [[ -n "$STATIC_DIR" ]] && rm -rf "$STATIC_DIR"
    if ((KEEP_RUN_DIR)); then
        echo "serve.sh: stopped; logs are in $RUN_DIR/logs" >&2
    else
        rm -rf "$RUN_DIR"
        echo "serve.sh: stopped" >&2
    fi
}

on_signal() {
    echo "serve.sh: $1 received, stopping nginx and ${#APP_PIDS[@]} app processes" >&2
    stop_all
    exit 0
}
trap 'on_signal SIGINT' INT
trap 'on_signal SIGTERM' TERM
trap 'on_signal SIGHUP' HUP
trap 'stop_all' EXIT

fail() {
    echo "serve.sh: error: $*" >&2
    stop_all
    exit 1
}

log_tail() { tail -n 25 "$1" 2>/dev/null | sed 's/^/    /' >&2; }

# ------------------------------------------------------------------ app processes
start_app() {
    local i="$1" port="${PORTS[$1]}"
    # setsid: own process group, so stopping it also stops anything it started, and
    # Ctrl+C in the terminal reaches only this script, which then stops everything in order.
    ATTENTION_LAB_TORCH_THREADS="${ATTENTION_LAB_TORCH_THREADS:-1}" \
        STREAMLIT_SERVER_COOKIE_SECRET="$COOKIE_SECRET" \
        setsid "$PYTHON" -m streamlit run app/Home.py \
        --server.port "$port" --server.address 127.0.0.1 --server.headless true \
        --server.fileWatcherType none --server.runOnSave false --browser.gatherUsageStats false \
        >>"$RUN_DIR/logs/app-$((i + 1)).log" 2>&1 &
    APP_PIDS[i]=$!
}

# Wait in the background so that a signal is handled at once, not after the wait.
wait_healthy() {
    "$PYTHON" "$HERE/serve_support.py" wait --timeout "$TIMEOUT" "$@" &
    wait $!
}

echo "serve.sh: starting $APPS app processes on 127.0.0.1 ports ${PORTS[*]} (logs: $RUN_DIR/logs)" >&2
for i in "${!PORTS[@]}"; do
    RESTARTS[i]=0
    start_app "$i"
done

args=()
for i in "${!PORTS[@]}"; do
    args+=(--pid "${APP_PIDS[i]}" --url "http://127.0.0.1:${PORTS[i]}/_stcore/health")
done
if ! wait_healthy "${args[@]}"; then
    for i in "${!PORTS[@]}"; do
        echo "  app process $((i + 1)) (127.0.0.1:${PORTS[i]}), last lines of its log:" >&2
        log_tail "$RUN_DIR/logs/app-$((i + 1)).log"
    done
    fail "the app processes did not become healthy"
fi

# ------------------------------------------------------------------ nginx
# Static files for nginx to send itself: Streamlit's frontend build and app/static, copied
# into a world-readable folder of their own (as root, nginx's worker runs as nobody, which
# may read neither the Python install nor a RUN_DIR inside a private folder).
STATIC_SRC="$("$PYTHON" -c 'import os, streamlit; print(os.path.join(os.path.dirname(streamlit.__file__), "static", "static"))')" ||
    fail "cannot locate Streamlit's static files with $PYTHON"
[[ -d "$STATIC_SRC" ]] || fail "Streamlit's static files are not at $STATIC_SRC"
STATIC_DIR="$(mktemp -d "${TMPDIR:-/tmp}/attention-lab-static.XXXXXX")" || fail "cannot create a temporary directory"
cp -R "$STATIC_SRC" "$STATIC_DIR/static" && cp -R "$ROOT/app/static" "$STATIC_DIR/app-static" &&
    chmod -R a+rX "$STATIC_DIR" || fail "cannot copy the static files into $STATIC_DIR"

servers=""
for port in "${PORTS[@]}"; do
    servers+="        server 127.0.0.1:$port max_fails=1 fail_timeout=5s;"$'\n'
done
conf="$(<"$HERE/nginx.conf.template")"
conf="${conf//@RUN_DIR@/$RUN_DIR}"
conf="${conf//@STATIC_DIR@/$STATIC_DIR}"
conf="${conf//@ADDRESS@/$([[ "$ADDRESS" == *:* ]] && echo "[$ADDRESS]" || echo "$ADDRESS")}"
conf="${conf//@PORT@/$PORT}"
conf="${conf//@MAX_BODY@/$((MAX_UPLOAD_MB + 2))m}"
conf="${conf//@UPSTREAM_SERVERS@$'\n'/$servers}"
if ((EUID == 0)); then
    # nginx's worker drops root for nobody: it must be able to write its temp files.
    conf="user nobody nogroup;"$'\n'"$conf"
    chmod 711 "$RUN_DIR" && chown -R nobody:nogroup "$RUN_DIR/tmp" || fail "cannot hand $RUN_DIR/tmp to nobody"
fi
printf '%s\n' "$conf" >"$RUN_DIR/nginx.conf"

NGINX_ARGS=(-p "$RUN_DIR/" -c "$RUN_DIR/nginx.conf" -e "$RUN_DIR/logs/error.log")
if ! "$NGINX" "${NGINX_ARGS[@]}" -t >"$RUN_DIR/logs/nginx-test.log" 2>&1; then
    log_tail "$RUN_DIR/logs/nginx-test.log"
    fail "nginx rejected the generated config $RUN_DIR/nginx.conf (see above)"
fi
setsid "$NGINX" "${NGINX_ARGS[@]}" -g 'daemon off;' >>"$RUN_DIR/logs/nginx.log" 2>&1 &
NGINX_PID=$!

CHECK_HOST="$ADDRESS"
[[ "$ADDRESS" == 0.0.0.0 ]] && CHECK_HOST=127.0.0.1
[[ "$ADDRESS" == *:* ]] && CHECK_HOST="[$([[ "$ADDRESS" == :: ]] && echo ::1 || echo "$ADDRESS")]"
if ! wait_healthy --pid "$NGINX_PID" --url "http://$CHECK_HOST:$PORT/_stcore/health"; then
    log_tail "$RUN_DIR/logs/error.log"
    log_tail "$RUN_DIR/logs/nginx.log"
    fail "nginx did not start on $ADDRESS:$PORT (see above)"
fi

SHOWN_HOST="$CHECK_HOST"
if [[ "$ADDRESS" == 0.0.0.0 ]]; then
    SHOWN_HOST="$(hostname -I 2>/dev/null | awk '{print $1}')"
    [[ -n "$SHOWN_HOST" ]] || SHOWN_HOST="$(hostname)"
fi
# The admin's figures as Prometheus metrics (serving/metrics.py), on loopback only.
if [[ -n "$METRICS_PORT" ]]; then
    setsid "$PYTHON" -m attention_lab.serving.metrics --port "$METRICS_PORT" >>"$RUN_DIR/logs/metrics.log" 2>&1 &
    METRICS_PID=$!
    if ! wait_healthy --pid "$METRICS_PID" --url "http://127.0.0.1:$METRICS_PORT/metrics"; then
        log_tail "$RUN_DIR/logs/metrics.log"
        fail "the metrics exporter did not start on 127.0.0.1:$METRICS_PORT (see above)"
    fi
    echo "serve.sh: Prometheus metrics on http://127.0.0.1:$METRICS_PORT/metrics (pid $METRICS_PID)" >&2
fi
echo "serve.sh: nginx pid $NGINX_PID, app pids ${APP_PIDS[*]}" >&2
echo "Attention Lab is ready: http://$SHOWN_HOST:$PORT/  ($APPS app processes behind nginx; Ctrl+C stops all)"

# ------------------------------------------------------------------ supervise
while true; do
    died=""
    wait -n -p died "$NGINX_PID" "${APP_PIDS[@]}"
    status=$?
    [[ -n "$died" ]] || continue
    if [[ "$died" == "$NGINX_PID" ]]; then
        log_tail "$RUN_DIR/logs/error.log"
        fail "nginx exited with status $status (see above)"
    fi
    for i in "${!APP_PIDS[@]}"; do
        [[ "${APP_PIDS[i]}" == "$died" ]] || continue
        log="$RUN_DIR/logs/app-$((i + 1)).log"
        if ((RESTARTS[i] >= MAX_RESTARTS)); then
            log_tail "$log"
            fail "app process $((i + 1)) exited with status $status for the $((MAX_RESTARTS + 1))th time (see above)"
        fi
        RESTARTS[i]=$((RESTARTS[i] + 1))
        echo "serve.sh: app process $((i + 1)) (pid $died) exited with status $status;" \
            "restarting it (${RESTARTS[i]}/$MAX_RESTARTS, log: $log)" >&2
        kill -TERM -- "-$died" 2>/dev/null # anything it left behind in its group
        start_app "$i"
    done
done
