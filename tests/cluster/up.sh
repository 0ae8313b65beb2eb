#!/usr/bin/env bash
# For humans: build the control plane (cached after the first time), start it in a fixed run
# dir (default $HOME/.cache/tart-kubelet/sandbox-cp; RUN=... to change), and print how to use
# it. Idempotent: if that run's apiserver is already ready, it only prints.
#
#   eval "$(tests/cluster/up.sh)"      # then: kubectl get ns
#   tests/cluster/stop.sh "$RUN"        # when done
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The whole body is one compound command: bash parses it completely before running it,
# so editing this file while it runs (e.g. during a long build) cannot corrupt the run.
{

RUN=${RUN:-$HOME/.cache/tart-kubelet/sandbox-cp}
"$CLUSTER_DIR/build.sh" >&2
if [ -f "$RUN/env" ] && [ -f "$RUN/kube-apiserver.pid" ] && pid_is_ours "$(cat "$RUN/kube-apiserver.pid")"; then
  load_env
  if curl_admin readyz > /dev/null 2>&1; then
    cp_log "already running: $RUN"
  else
    cp_die "$RUN has a kube-apiserver that is not ready; see $RUN/logs, or stop.sh $RUN"
  fi
else
  if [ -f "$RUN/kube-apiserver.pid" ] || [ -f "$RUN/etcd.pid" ]; then
    "$CLUSTER_DIR/stop.sh" "$RUN" >&2
  fi
  "$CLUSTER_DIR/start.sh" --run "$RUN" "$@" > /dev/null
  load_env
fi
echo "export KUBECONFIG=$RUN/kubeconfig"
echo "export RUN=$RUN"
echo "# logs: $RUN/logs   stop: $CLUSTER_DIR/stop.sh $RUN"
exit
}
