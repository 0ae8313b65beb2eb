#!/usr/bin/env bash
# Stop or start one component of a running control plane, on the same ports and with the same
# arguments as start.sh gave it (e.g. restart kube-apiserver alone for /readyz tests).
#
# Usage: component.sh RUN start|stop NAME
#   NAME: etcd | kube-apiserver | kube-scheduler | kube-controller-manager
# `start kube-apiserver` returns once /readyz is ok (deadline 60 s); `start` of the others
# returns once the process is spawned.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The whole body is one compound command: bash parses it completely before running it,
# so editing this file while it runs (e.g. during a long build) cannot corrupt the run.
{

[ $# -eq 3 ] || cp_die "usage: component.sh RUN start|stop NAME"
RUN=$(cd "$1" && pwd) || cp_die "no run dir $1"
action=$2 name=$3
case " $COMPONENTS " in *" $name "*) ;; *) cp_die "unknown component $name" ;; esac
load_env
case "$action" in
  stop) stop_component "$name" ;;
  start)
    start_component "$name"
    if [ "$name" = kube-apiserver ]; then
      wait_apiserver_ready $(( $(now_ms) + 60000 )) \
        || { tail -n 20 "$RUN/logs/$name.log" >&2; cp_die "kube-apiserver did not become ready"; }
    fi
    ;;
  *) cp_die "unknown action $action (start|stop)" ;;
esac
exit
}
