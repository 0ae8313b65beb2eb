#!/usr/bin/env bash
# Start a Kubernetes v1.20.2 control plane on 127.0.0.1 with free ports: etcd, kube-apiserver
# (TLS, client-cert, token and bootstrap-token authn, Node,RBAC authz, NodeRestriction),
# kube-scheduler and kube-controller-manager (node lifecycle with a short grace period, GC,
# namespace, pod GC, signing of approved CSRs with the cluster CA, the kubelet client CSR
# approver).
#
# Usage: start.sh [--run DIR] [--owner-pid PID] [--node-grace SECONDS] [--signing-duration D]
#                 [--nice N]
#   --run DIR          run dir (created if missing; default: a new /tmp/tart-kubelet-cp.XXXXXX)
#   --owner-pid PID    start a watchdog that runs stop.sh when PID exits
#   --node-grace S     kube-controller-manager --node-monitor-grace-period (default 16 s; an
#                      agent must renew its Lease more often than that)
#   --signing-duration D  kube-controller-manager --cluster-signing-duration (default 8760h):
#                      the lifetime of certificates issued for approved CSRs (short: renewals)
#   --nice N           run every component at niceness N (default 0), restarts by component.sh
#                      included: the sandbox's agent-overhead benchmark gives the agents the
#                      cores first, as the control plane runs on other machines in production
# Returns only when /readyz is ok, scheduler and controller-manager /healthz are ok and the
# default and kube-node-lease namespaces exist. Prints the run dir on stdout (last line).
# On failure it stops whatever it started and prints the tail of the relevant log.
# Binaries come from tests/cluster/build.sh ($KUBE_CACHE/bin). See docs/testing.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The whole body is one compound command: bash parses it completely before running it,
# so editing this file while it runs (e.g. during a long build) cannot corrupt the run.
{

RUN=${RUN:-}
OWNER_PID=${OWNER_PID:-}
NODE_GRACE=${NODE_GRACE:-16}
SIGNING_DURATION=${SIGNING_DURATION:-8760h}
NICE=${NICE:-0}
START_TIMEOUT_S=${START_TIMEOUT_S:-90}
while [ $# -gt 0 ]; do
  case "$1" in
    --run) RUN=$2; shift 2 ;;
    --owner-pid) OWNER_PID=$2; shift 2 ;;
    --node-grace) NODE_GRACE=$2; shift 2 ;;
    --signing-duration) SIGNING_DURATION=$2; shift 2 ;;
    --nice) NICE=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) cp_die "unknown argument: $1 (see --help)" ;;
  esac
done

[[ $NICE =~ ^-?[0-9]+$ ]] || cp_die "--nice wants an integer, got '$NICE'"
for b in kube-apiserver kube-scheduler kube-controller-manager; do
  [ -x "$BIN/$b" ] || cp_die "$BIN/$b not found: run tests/cluster/build.sh first"
done
for c in etcd openssl curl; do
  command -v "$c" > /dev/null || cp_die "$c not found: run tests/cluster/build.sh first"
done
[ -x /usr/bin/python3 ] || cp_die "/usr/bin/python3 not found (used to pick free ports)"
if [ -n "$OWNER_PID" ]; then
  [ -d "/proc/$OWNER_PID" ] || cp_die "--owner-pid $OWNER_PID is not a running process"
fi

if [ -z "$RUN" ]; then
  RUN=$(mktemp -d /tmp/tart-kubelet-cp.XXXXXX)
else
  mkdir -p "$RUN"
  RUN=$(cd "$RUN" && pwd)
fi
for c in $COMPONENTS; do
  if [ -f "$RUN/$c.pid" ] && pid_is_ours "$(cat "$RUN/$c.pid")"; then
    cp_die "$c is already running in $RUN (stop it with tests/cluster/stop.sh $RUN)"
  fi
done
t0=$(now_ms)
deadline=$(( t0 + START_TIMEOUT_S * 1000 ))
mkdir -p "$RUN/pki" "$RUN/args" "$RUN/logs" "$RUN/users"
PKI=$RUN/pki

# === PKI ===
# EC P-256 keys: fast to generate; Go, rustls (kube-rs), Python and curl all accept them.
# Certificates are v3 with SANs/EKUs, which rustls requires.
gen_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2> /dev/null; }
if [ ! -f "$PKI/ca.crt" ]; then
  gen_key "$PKI/ca.key"
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=tart-kubelet-test-ca" -days 30 \
    -out "$PKI/ca.crt" 2> /dev/null
  gen_key "$PKI/apiserver.key"
  printf '%s\n' "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
    "extendedKeyUsage=serverAuth" "keyUsage=critical,digitalSignature,keyEncipherment" > "$PKI/apiserver.ext"
  openssl req -new -key "$PKI/apiserver.key" -subj "/CN=kube-apiserver" 2> /dev/null \
    | openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
      -days 30 -extfile "$PKI/apiserver.ext" -out "$PKI/apiserver.crt" 2> /dev/null
  # Service-account token keys (required flags in 1.20; RSA as in the tested recipe).
  openssl genrsa -out "$PKI/sa.key" 2048 2> /dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2> /dev/null
  # Client certs: admin, the two controllers, and the apiserver's kubelet client (for
  # `kubectl logs` through the apiserver to an agent's kubelet endpoint).
  "$CLUSTER_DIR/mint-kubeconfig.sh" --certs-only "$RUN" admin system:masters
  "$CLUSTER_DIR/mint-kubeconfig.sh" --certs-only "$RUN" system:kube-scheduler
  # --use-service-account-credentials=false runs every controller under this one identity,
  # which must hold all their roles; system:masters is the simple honest choice for a test
  # cluster (the agent, not the controller-manager, is what runs under least privilege).
  "$CLUSTER_DIR/mint-kubeconfig.sh" --certs-only "$RUN" system:kube-controller-manager system:masters
  "$CLUSTER_DIR/mint-kubeconfig.sh" --certs-only "$RUN" kube-apiserver-kubelet-client system:masters
  # Audit policy: one JSON line per completed request (user, verb, URI, code) in
  # $RUN/logs/audit.log, for per-user API request rates (e.g. the sandbox's agent load figure).
  # The apiserver's own loopback traffic and health probes are left out.
  cat > "$PKI/audit-policy.yaml" << 'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: None
  users: ["system:apiserver"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version"]
- level: Metadata
YAML
  # Static token users: the admin (for tools that prefer a bearer token). More users: mint
  # client certificates with mint-kubeconfig.sh (1.20 reads the token file only at start).
  ADMIN_TOKEN=$(openssl rand -hex 16)
  (umask 077; echo "$ADMIN_TOKEN,admin-token,admin-token,system:masters" > "$PKI/tokens.csv"
    echo "$ADMIN_TOKEN" > "$RUN/admin.token")
fi

# The agents' kubelet API serving certificate (127.0.0.1 and localhost, where the API server
# reaches them), signed by the cluster CA so the API server can verify it
# (--kubelet-certificate-authority). Agents check the API server's kubelet client certificate
# against the same CA (--client-ca-file=$PKI/ca.crt). Outside the block above so that a run
# directory made before this certificate existed gains it.
if [ ! -f "$PKI/kubelet-serving.crt" ]; then
  gen_key "$PKI/kubelet-serving.key"
  printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth" \
    "keyUsage=critical,digitalSignature,keyEncipherment" > "$PKI/kubelet-serving.ext"
  openssl req -new -key "$PKI/kubelet-serving.key" -subj "/CN=tart-kubelet-serving" 2> /dev/null \
    | openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
      -days 30 -extfile "$PKI/kubelet-serving.ext" -out "$PKI/kubelet-serving.crt" 2> /dev/null
fi

# === ports ===
# Free ports in 20000-32767 (below Linux's ephemeral range, so outgoing connections do not
# take them between this check and the bind). A race with another start.sh is still possible:
# a component that fails with "address already in use" makes start.sh retry with new ports.
pick_ports() {
  /usr/bin/python3 - "$1" << 'PY'
import random, socket, sys
n, held, ports = int(sys.argv[1]), [], []
while len(ports) < n:
    p = random.randint(20000, 32767)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        s.close()
        continue
    held.append(s)
    ports.append(p)
print(" ".join(map(str, ports)))
PY
}

write_config() {
  local kc=$RUN/kubeconfig server=https://127.0.0.1:$APISERVER_PORT
  cat > "$RUN/env" << EOF
KUBE_VERSION=$KUBE_VERSION
BIN=$BIN
RUN=$RUN
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
APISERVER_PORT=$APISERVER_PORT
SCHEDULER_PORT=$SCHEDULER_PORT
CONTROLLER_MANAGER_PORT=$CONTROLLER_MANAGER_PORT
SERVER=$server
KUBECONFIG=$kc
NODE_GRACE=$NODE_GRACE
OWNER_PID=$OWNER_PID
NICE=$NICE
EOF
  "$CLUSTER_DIR/mint-kubeconfig.sh" --reuse --out "$kc" "$RUN" admin system:masters > /dev/null
  "$CLUSTER_DIR/mint-kubeconfig.sh" --reuse --out "$RUN/scheduler.kubeconfig" "$RUN" system:kube-scheduler > /dev/null
  "$CLUSTER_DIR/mint-kubeconfig.sh" --reuse --out "$RUN/controller-manager.kubeconfig" "$RUN" \
    system:kube-controller-manager system:masters > /dev/null

  printf '%s\n' --name=etcd --data-dir="$RUN/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="etcd=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync \
    --quota-backend-bytes=1073741824 > "$RUN/args/etcd"

  # ServiceAccount admission is off because no token controller creates `default` SAs
  # (envtest makes the same choice). NodeRestriction is on, as in a production cluster.
  printf '%s\n' --etcd-servers="http://127.0.0.1:$ETCD_PORT" --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --cert-dir="$RUN/pki/generated" --tls-cert-file="$PKI/apiserver.crt" \
    --tls-private-key-file="$PKI/apiserver.key" --client-ca-file="$PKI/ca.crt" \
    --token-auth-file="$PKI/tokens.csv" --enable-bootstrap-token-auth \
    --authorization-mode=Node,RBAC \
    --enable-admission-plugins=NodeRestriction --disable-admission-plugins=ServiceAccount \
    --service-cluster-ip-range=10.96.0.0/16 --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --kubelet-client-certificate="$PKI/clients/kube-apiserver-kubelet-client.crt" \
    --kubelet-client-key="$PKI/clients/kube-apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="$PKI/ca.crt" \
    --audit-policy-file="$PKI/audit-policy.yaml" --audit-log-path="$RUN/logs/audit.log" \
    --audit-log-maxsize=200 --audit-log-maxbackup=1 \
    --allow-privileged=true --profiling=false > "$RUN/args/kube-apiserver"

  printf '%s\n' --kubeconfig="$RUN/scheduler.kubeconfig" --leader-elect=false \
    --bind-address=127.0.0.1 --port=0 --secure-port="$SCHEDULER_PORT" \
    --cert-dir="$RUN/pki/generated-scheduler" --profiling=false > "$RUN/args/kube-scheduler"

  # Node lifecycle: a node whose Lease is not renewed for NODE_GRACE s becomes Ready=Unknown
  # and gets the node.kubernetes.io/unreachable taints; checked every second.
  # csrsigning signs approved CertificateSigningRequests with the cluster CA, so an agent's
  # kubelet-serving certificate chains to the CA the API server verifies kubelets with
  # (--kubelet-certificate-authority). csrapproving is the standard approver: it approves
  # kubelet *client* requests (signer kube-apiserver-client-kubelet) only for requesters an
  # operator's ClusterRoleBinding lets create certificatesigningrequests/nodeclient or
  # selfnodeclient, so it approves nothing until a test binds those roles; serving requests
  # are never approved by it (the tests and the sandbox approve those through /approval).
  printf '%s\n' --kubeconfig="$RUN/controller-manager.kubeconfig" --leader-elect=false \
    --bind-address=127.0.0.1 --port=0 --secure-port="$CONTROLLER_MANAGER_PORT" \
    --cert-dir="$RUN/pki/generated-controller-manager" --profiling=false \
    --controllers=nodelifecycle,garbagecollector,namespace,podgc,clusterrole-aggregation,csrsigning,csrapproving \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --cluster-signing-duration="$SIGNING_DURATION" \
    --use-service-account-credentials=false \
    --node-monitor-period=1s --node-monitor-grace-period="${NODE_GRACE}s" \
    --node-startup-grace-period=30s --pod-eviction-timeout=30s \
    --terminated-pod-gc-threshold=100 --concurrent-gc-syncs=5 \
    --namespace-sync-period=30s > "$RUN/args/kube-controller-manager"
}

# port_conflict NAME: its log says a port was taken.
port_conflict() { tail -n 30 "$RUN/logs/$1.log" 2> /dev/null | grep -qi 'address already in use'; }

fail() {
  local name=$1
  cp_log "$name did not become ready; last lines of $RUN/logs/$name.log:"
  tail -n 25 "$RUN/logs/$name.log" >&2 || true
  "$CLUSTER_DIR/stop.sh" "$RUN" >&2 || true
  cp_die "control plane failed to start (logs kept in $RUN/logs)"
}

# shellcheck disable=SC2317 # called through wait_until
healthz() { curl -sfk --max-time 5 "https://127.0.0.1:$1/healthz"; }

# Start everything; returns 2 on a port conflict (caller retries with new ports).
start_all() {
  start_component etcd
  WAIT_PIDFILE="$RUN/etcd.pid" wait_until "$deadline" "etcd /health" \
    curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" \
    || { port_conflict etcd && CONFLICT=etcd && return 2; fail etcd; }
  # The scheduler and controller-manager retry until the apiserver answers, so start them
  # together: that overlaps their start-up with the apiserver's (~5-8 s).
  start_component kube-apiserver
  start_component kube-scheduler
  start_component kube-controller-manager
  wait_apiserver_ready "$deadline" || { port_conflict kube-apiserver && CONFLICT=kube-apiserver && return 2; fail kube-apiserver; }
  WAIT_PIDFILE="$RUN/kube-scheduler.pid" wait_until "$deadline" "kube-scheduler /healthz" healthz "$SCHEDULER_PORT" \
    || { port_conflict kube-scheduler && CONFLICT=kube-scheduler && return 2; fail kube-scheduler; }
  WAIT_PIDFILE="$RUN/kube-controller-manager.pid" wait_until "$deadline" "kube-controller-manager /healthz" \
    healthz "$CONTROLLER_MANAGER_PORT" \
    || { port_conflict kube-controller-manager && CONFLICT=kube-controller-manager && return 2; fail kube-controller-manager; }
  wait_until "$deadline" "namespace default" curl_admin api/v1/namespaces/default || fail kube-apiserver
  wait_until "$deadline" "namespace kube-node-lease" curl_admin api/v1/namespaces/kube-node-lease || fail kube-apiserver
}

if [ -n "$OWNER_PID" ]; then
  # The watchdog, started before any component so that nothing outlives the owner even if
  # this script is killed half-way: `tail --pid` returns when the owner exits (checked every
  # second); then it stops the whole run. stop.sh kills the watchdog on a normal stop.
  # shellcheck disable=SC2016 # $1..$3 are expanded by the watchdog's bash
  setsid bash -c 'tail --pid="$1" -f /dev/null; exec "$2/stop.sh" "$3"' watchdog \
    "$OWNER_PID" "$CLUSTER_DIR" "$RUN/" >> "$RUN/logs/watchdog.log" 2>&1 < /dev/null &
  echo $! > "$RUN/watchdog.pid"
fi

attempt=1
CONFLICT=etcd
while :; do
  ports=$(pick_ports 5)
  # Test hook: START_PORTS="etcd etcd-peer apiserver scheduler controller-manager" forces the
  # first attempt's ports, 0 = pick one (to test the retry on a port conflict).
  if [ "$attempt" = 1 ] && [ -n "${START_PORTS:-}" ]; then
    read -r -a picked <<< "$ports"
    read -r -a forced <<< "$START_PORTS"
    for i in 0 1 2 3 4; do
      [ "${forced[$i]:-0}" = 0 ] || picked[i]=${forced[$i]}
    done
    ports="${picked[*]}"
  fi
  read -r ETCD_PORT ETCD_PEER_PORT APISERVER_PORT SCHEDULER_PORT CONTROLLER_MANAGER_PORT <<< "$ports"
  write_config
  rc=0
  start_all || rc=$?
  [ "$rc" = 0 ] && break
  if [ "$rc" != 2 ] || [ "$attempt" -ge 3 ]; then fail "$CONFLICT"; fi
  cp_log "port conflict on attempt $attempt; retrying with new ports"
  STOP_KEEP_WATCHDOG=1 "$CLUSTER_DIR/stop.sh" "$RUN" >&2
  attempt=$((attempt + 1))
done

if [ -n "$OWNER_PID" ] && [ ! -d "/proc/$OWNER_PID" ]; then
  # The owner exited while we were starting: its watchdog may have stopped an incomplete set.
  "$CLUSTER_DIR/stop.sh" "$RUN" >&2 || true
  cp_die "owner $OWNER_PID exited during start; stopped $RUN"
fi
echo "$(( $(now_ms) - t0 ))" > "$RUN/start-ms"
cp_log "ready in $(( $(now_ms) - t0 )) ms: $RUN (server https://127.0.0.1:$APISERVER_PORT)"
echo "$RUN"
exit
}
