# shellcheck shell=bash
# Shared helpers for the control-plane scripts (start.sh, stop.sh, component.sh,
# mint-kubeconfig.sh). Sourced, never executed.
#
# Run-dir layout (everything a run needs lives under $RUN; nothing global):
#   $RUN/env                   KEY=VALUE: ports, server URL, bin dir (read by the Rust harness)
#   $RUN/kubeconfig            admin (CN=admin, O=system:masters), client certificate
#   $RUN/pki/                  CA, serving cert, SA keys, tokens.csv
#   $RUN/pki/clients/<user>.{crt,key}  client certificates (CN=user, O=groups)
#   $RUN/args/<component>      one argument per line, so a component can be restarted alone
#   $RUN/<component>.pid       PID of the running component (removed once it is stopped)
#   $RUN/logs/<component>.log  stdout+stderr, appended across restarts, kept after stop
#   $RUN/users/<user>.kubeconfig  minted by mint-kubeconfig.sh

KUBE_VERSION=1.20.2
KUBE_CACHE=${KUBE_CACHE:-$HOME/.cache/tart-kubelet/kube-$KUBE_VERSION}
BIN=${BIN:-$KUBE_CACHE/bin}
# shellcheck disable=SC2034 # used by the scripts that source this file
CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Stop order: the apiserver first (so controllers stop acting), etcd last.
# shellcheck disable=SC2034
COMPONENTS="kube-apiserver kube-scheduler kube-controller-manager etcd"

cp_die() { echo "cluster/${0##*/}: error: $*" >&2; exit 1; }
cp_log() { echo "cluster/${0##*/}: $*" >&2; }

# now_ms: wall clock in milliseconds.
now_ms() { date +%s%3N; }

# component_bin NAME: the executable for a component.
component_bin() {
  case "$1" in
    etcd) command -v etcd || echo /usr/bin/etcd ;;
    *) echo "$BIN/$1" ;;
  esac
}

# pid_is_ours PID: true when PID is alive (not a zombie) and its command line mentions "$RUN/",
# so a recycled PID is never signalled.
pid_is_ours() {
  local pid=$1 state cmd
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  state=$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] && [ -n "$state" ] || return 1
  cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline") || return 1
  case "$cmd" in *"$RUN/"*) return 0 ;; *) return 1 ;; esac
}

# stray_pids: PIDs of etcd/kube-* processes whose command line mentions $RUN but that no pid
# file names (e.g. after a crash of start.sh). Matches on argv[0]'s basename only, so the
# scripts themselves (whose argv also mentions $RUN) are never included.
stray_pids() {
  local p exe cmd
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    exe=$(tr '\0' '\n' 2>/dev/null < "/proc/$p/cmdline" | head -1) || continue
    case "${exe##*/}" in etcd|kube-apiserver|kube-scheduler|kube-controller-manager) ;; *) continue ;; esac
    cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline") || continue
    case "$cmd" in *"$RUN/"*) pid_is_ours "$p" && echo "$p" ;; esac
  done
}

# stop_pid NAME PID [GRACE_S]: SIGTERM, poll until gone (deadline GRACE_S, default 10 s),
# then SIGKILL and poll again (5 s). Returns non-zero if the process survived SIGKILL.
stop_pid() {
  local name=$1 pid=$2 grace=${3:-10} deadline
  pid_is_ours "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(now_ms) + grace * 1000 ))
  while pid_is_ours "$pid" && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.1; done
  if pid_is_ours "$pid"; then
    [ "${STOP_QUIET:-0}" = 1 ] || cp_log "$name (pid $pid) still running ${grace}s after SIGTERM; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    deadline=$(( $(now_ms) + 5000 ))
    while pid_is_ours "$pid" && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.1; done
  fi
  ! pid_is_ours "$pid"
}

# stop_component NAME: stop the component named by $RUN/NAME.pid, then remove the pid file.
# kube-apiserver 1.20 lingers for a long time after it stops listening on SIGTERM (its
# endpoint reconciler keeps retrying), so it gets 3 s before SIGKILL; the others 10 s.
stop_component() {
  local name=$1 pid grace=10
  [ -f "$RUN/$name.pid" ] || return 0
  pid=$(cat "$RUN/$name.pid" 2>/dev/null || true)
  local quiet=0
  [ "$name" = kube-apiserver ] && grace=3 quiet=1
  STOP_QUIET=$quiet stop_pid "$name" "$pid" "$grace" || { cp_log "$name (pid $pid) is still running"; return 1; }
  rm -f "$RUN/$name.pid"
}

# start_component NAME: start NAME in its own session at niceness $NICE (start.sh --nice,
# default 0) with the arguments in $RUN/args/NAME, appending to $RUN/logs/NAME.log, and record
# its PID. Refuses if it is already running.
start_component() {
  local name=$1 exe pid
  local -a args=()
  [ -f "$RUN/args/$name" ] || cp_die "no $RUN/args/$name (was this run dir made by start.sh?)"
  if [ -f "$RUN/$name.pid" ] && pid_is_ours "$(cat "$RUN/$name.pid")"; then
    cp_die "$name is already running (pid $(cat "$RUN/$name.pid"))"
  fi
  mapfile -t args < "$RUN/args/$name"
  exe=$(component_bin "$name")
  [ -x "$exe" ] || cp_die "$exe not found: run tests/cluster/build.sh first"
  mkdir -p "$RUN/logs"
  echo "=== $(date -u +%FT%TZ) starting $name" >> "$RUN/logs/$name.log"
  setsid nice -n "${NICE:-0}" "$exe" "${args[@]}" >> "$RUN/logs/$name.log" 2>&1 < /dev/null &
  pid=$!
  echo "$pid" > "$RUN/$name.pid"
}

# load_env: read $RUN/env (written by start.sh) into the shell.
load_env() {
  [ -f "$RUN/env" ] || cp_die "$RUN/env not found (not a run dir made by start.sh?)"
  # shellcheck disable=SC1091
  . "$RUN/env"
}

# curl_admin PATH: GET https://127.0.0.1:$APISERVER_PORT/PATH as the admin, 5 s deadline.
curl_admin() {
  curl -sf --max-time 5 --cacert "$RUN/pki/ca.crt" --cert "$RUN/pki/clients/admin.crt" \
    --key "$RUN/pki/clients/admin.key" "https://127.0.0.1:$APISERVER_PORT/$1"
}

# wait_until DEADLINE_MS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s until it succeeds or
# the deadline passes. Fails early if the component named by $WAIT_PIDFILE (if set) died.
wait_until() {
  local deadline=$1 what=$2
  shift 2
  while :; do
    "$@" > /dev/null 2>&1 && return 0
    if [ -n "${WAIT_PIDFILE:-}" ] && ! pid_is_ours "$(cat "$WAIT_PIDFILE" 2>/dev/null)"; then
      cp_log "$what: the process exited"
      return 1
    fi
    [ "$(now_ms)" -lt "$deadline" ] || { cp_log "$what: timed out"; return 1; }
    sleep 0.2
  done
}

# wait_apiserver_ready DEADLINE_MS: /readyz answers ok.
wait_apiserver_ready() {
  WAIT_PIDFILE="$RUN/kube-apiserver.pid" wait_until "$1" "kube-apiserver /readyz" curl_admin readyz
}
