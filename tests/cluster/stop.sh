#!/usr/bin/env bash
# Stop a control plane started by start.sh: the owner-pid watchdog, then kube-apiserver,
# kube-scheduler, kube-controller-manager and etcd, each by the PID in $RUN/<name>.pid
# (SIGTERM, poll until gone with a 10 s deadline, then SIGKILL). Then any etcd/kube-* process
# whose command line still mentions $RUN is stopped too. Logs are kept in $RUN/logs; etcd's
# data dir (64 MB of preallocated WAL) is removed unless KEEP_ETCD_DATA=1.
#
# Usage: stop.sh RUN
# Exit status 0 only when nothing of the run is left running. Idempotent.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The whole body is one compound command: bash parses it completely before running it,
# so editing this file while it runs (e.g. during a long build) cannot corrupt the run.
{

[ $# -eq 1 ] || cp_die "usage: stop.sh RUN"
[ -d "$1" ] || cp_die "no run dir $1"
RUN=$(cd "$1" && pwd)

# The watchdog is a session leader (setsid): kill its group so its `tail --pid` goes too.
# When the watchdog itself runs this script (its owner exited), it is $$: skip it.
# STOP_KEEP_WATCHDOG=1 (start.sh retrying on a port conflict) leaves it running.
if [ -f "$RUN/watchdog.pid" ] && [ "${STOP_KEEP_WATCHDOG:-0}" != 1 ]; then
  wpid=$(cat "$RUN/watchdog.pid")
  if [ "$wpid" != "$$" ] && pid_is_ours "$wpid"; then
    kill -TERM -- "-$wpid" 2> /dev/null || true
  fi
  rm -f "$RUN/watchdog.pid"
fi

ok=1
for c in $COMPONENTS; do
  stop_component "$c" || ok=0
done
for pid in $(stray_pids); do
  cp_log "stopping stray process $pid ($(tr '\0' ' ' < "/proc/$pid/cmdline" | cut -c1-80))"
  stop_pid stray "$pid" 5 || ok=0
done
[ "$ok" = 1 ] || cp_die "some processes of $RUN survived SIGKILL"
[ -n "$(stray_pids)" ] && cp_die "processes of $RUN are still running"
if [ "${KEEP_ETCD_DATA:-0}" != 1 ]; then rm -rf "$RUN/etcd"; fi
cp_log "stopped: $RUN (logs in $RUN/logs)"
exit
}
