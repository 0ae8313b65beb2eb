#!/usr/bin/env bash
# Mint a client identity for a run's control plane: a key and a certificate signed by the
# run's CA with CN=USER and one O=GROUP per group (the apiserver's --client-ca-file
# authenticates it as that user and groups), and a self-contained kubeconfig (CA, cert and key
# embedded) pointing at the run's apiserver. RBAC decides what the user may do: bind a Role or
# ClusterRole to it (e.g. `kubectl create clusterrolebinding ... --user=USER`).
#
# Usage: mint-kubeconfig.sh [--out PATH] [--reuse] [--certs-only] RUN USER [GROUP...]
#   --out PATH    where to write the kubeconfig (default $RUN/users/USER.kubeconfig)
#   --reuse       reuse $RUN/pki/clients/USER.{crt,key} if they exist (default: mint afresh)
#   --certs-only  only write the key and certificate (start.sh, before ports are known)
# Prints the kubeconfig path on stdout. Examples:
#   mint-kubeconfig.sh "$RUN" system:node:mini-1 system:nodes   # a kubelet-like node identity
#   mint-kubeconfig.sh "$RUN" alice dev-team
# The key never appears in argv or logs; files are written 0600 and renamed into place.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The whole body is one compound command: bash parses it completely before running it,
# so editing this file while it runs (e.g. during a long build) cannot corrupt the run.
{

OUT="" REUSE=0 CERTS_ONLY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --reuse) REUSE=1; shift ;;
    --certs-only) CERTS_ONLY=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    --*) cp_die "unknown option: $1" ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || cp_die "usage: mint-kubeconfig.sh [--out PATH] [--reuse] [--certs-only] RUN USER [GROUP...]"
RUN=$(cd "$1" && pwd) || cp_die "no run dir $1"
USER_NAME=$2
shift 2
[ -f "$RUN/pki/ca.key" ] || cp_die "$RUN/pki/ca.key not found (not a run dir made by start.sh?)"

# openssl -subj treats '/' '+' '\' '=' specially; Kubernetes user names never need them here.
valid_name() { [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9:._@-]*$ ]] && [ ${#1} -le 200 ]; }
valid_name "$USER_NAME" || cp_die "invalid user name '$USER_NAME' (allowed: letters, digits, : . _ @ -)"
subj="/CN=$USER_NAME"
for g in "$@"; do
  valid_name "$g" || cp_die "invalid group name '$g'"
  subj="$subj/O=$g"
done

umask 077
mkdir -p "$RUN/pki/clients" "$RUN/users"
crt=$RUN/pki/clients/$USER_NAME.crt
key=$RUN/pki/clients/$USER_NAME.key
if [ "$REUSE" = 0 ] || [ ! -f "$crt" ] || [ ! -f "$key" ]; then
  tmp=$(mktemp -d "$RUN/pki/clients/.mint.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/key" 2> /dev/null
  printf '%s\n' "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature" > "$tmp/ext"
  # A random serial instead of -CAcreateserial: concurrent mints must not race on ca.srl.
  openssl req -new -key "$tmp/key" -subj "$subj" 2> /dev/null \
    | openssl x509 -req -CA "$RUN/pki/ca.crt" -CAkey "$RUN/pki/ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -days 30 -extfile "$tmp/ext" -out "$tmp/crt" 2> /dev/null \
    || cp_die "openssl failed to sign a certificate for $USER_NAME"
  mv "$tmp/key" "$key"
  mv "$tmp/crt" "$crt"
fi
[ "$CERTS_ONLY" = 1 ] && exit 0

load_env
OUT=${OUT:-$RUN/users/$USER_NAME.kubeconfig}
tmpkc=$(mktemp "$OUT.XXXXXX")
cat > "$tmpkc" << EOF
apiVersion: v1
kind: Config
clusters:
- name: tart-kubelet-test
  cluster:
    server: $SERVER
    certificate-authority-data: $(base64 -w0 "$RUN/pki/ca.crt")
users:
- name: $USER_NAME
  user:
    client-certificate-data: $(base64 -w0 "$crt")
    client-key-data: $(base64 -w0 "$key")
contexts:
- name: $USER_NAME@tart-kubelet-test
  context:
    cluster: tart-kubelet-test
    user: $USER_NAME
    namespace: default
current-context: $USER_NAME@tart-kubelet-test
EOF
mv "$tmpkc" "$OUT"
echo "$OUT"
exit
}
