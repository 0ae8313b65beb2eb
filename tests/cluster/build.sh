#!/usr/bin/env bash
# Build etcd + kube-apiserver, kube-scheduler, kube-controller-manager v1.20.2 from Debian
# bookworm's `kubernetes` source package with Debian's Go, and cache them.
#
# Output: $KUBE_CACHE/bin/{kube-apiserver,kube-scheduler,kube-controller-manager}
#         (default $HOME/.cache/tart-kubelet/kube-1.20.2). etcd comes from Debian's etcd-server.
# Idempotent: when the apt packages are installed and all three binaries exist and report
# v1.20.2, it returns in under a second and needs neither root nor network. Otherwise it needs
# root (apt-get) and the machine's Debian package registry; a cold run takes 5-12 min.
# Concurrent callers serialize on $KUBE_CACHE.lock (flock), so only one builds.
# See docs/testing.md, and docs/reference/control-plane-notes.md §1.3 for the two build fixes.
set -euo pipefail

# The whole body is one compound command: bash parses it completely before running it,
# so editing this file while it runs (e.g. during a long build) cannot corrupt the run.
{

KUBE_VERSION=1.20.2
DEB_VER=${DEB_VER:-1.20.5+really1.20.2-1.1+deb12u1}
KUBE_CACHE=${KUBE_CACHE:-$HOME/.cache/tart-kubelet/kube-$KUBE_VERSION}
BINS="kube-apiserver kube-scheduler kube-controller-manager"
APT_PKGS="golang-go etcd-server etcd-client golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev openssl curl tmux python3-kubernetes python3-yaml python3-jsonschema prometheus shellcheck llvm file"
# kubectl: the machine's own when it has one (any client from 1.19 on talks to v1.20.2);
# otherwise Debian's, built from the same source package as the control plane.
command -v kubectl >/dev/null 2>&1 || APT_PKGS="$APT_PKGS kubernetes-client"
export DEBIAN_FRONTEND=noninteractive

die() { echo "cluster/build.sh: $*" >&2; exit 1; }
log() { echo "cluster/build.sh: $*" >&2; }

have_all() {
  for b in $BINS; do
    [ -x "$KUBE_CACHE/bin/$b" ] || return 1
    "$KUBE_CACHE/bin/$b" --version 2>/dev/null | grep -q "v$KUBE_VERSION" || return 1
  done
}

# missing_what: a human-readable list of what the warm path lacks.
missing_what() {
  local m="" p
  for p in $APT_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || m="$m $p"
  done
  have_all || m="$m kube-binaries-in-$KUBE_CACHE/bin"
  echo "${m# }"
}

have_pkgs() {
  for p in $APT_PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 1
  done
}

# The deb-src entry is derived from the machine's own Debian entry: same URI, same keyring,
# the main suite only. No registry host is written in this repository. Skipped only when apt
# already knows the exact source version (an unrelated deb-src entry is not enough).
ensure_deb_src() {
  if grep -rqsE '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    apt_update
    if apt-cache showsrc kubernetes 2>/dev/null | grep -qxF "Version: $DEB_VER"; then
      return 0
    fi
    [ -f /etc/apt/sources.list.d/tart-kubelet-src.sources ] && return 0
  fi
  local uri="" suite="" keyring=""
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # First stanza with Types: deb whose suites include a suite without '-' (the main one).
    uri=$(awk 'BEGIN{RS="";FS="\n"} /Types:[^\n]*deb/ {for(i=1;i<=NF;i++) if($i ~ /^URIs:/){sub(/^URIs:[ ]*/,"",$i); split($i,a," "); print a[1]; exit}}' "$f")
    suite=$(awk 'BEGIN{RS="";FS="\n"} /Types:[^\n]*deb/ {for(i=1;i<=NF;i++) if($i ~ /^Suites:/){sub(/^Suites:[ ]*/,"",$i); split($i,a," "); print a[1]; exit}}' "$f")
    keyring=$(awk 'BEGIN{RS="";FS="\n"} /Types:[^\n]*deb/ {for(i=1;i<=NF;i++) if($i ~ /^Signed-By:/){sub(/^Signed-By:[ ]*/,"",$i); print $i; exit}}' "$f")
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    read -r uri suite < <(awk '$1=="deb" { i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $i, $(i+1); exit }' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || die "no Debian 'deb' entry found in /etc/apt to derive a deb-src entry from"
  suite=${suite%%-*}
  log "adding deb-src entry derived from the existing one (suite $suite)"
  {
    echo "Types: deb-src"
    echo "URIs: $uri"
    echo "Suites: $suite"
    echo "Components: main"
    [ -n "$keyring" ] && echo "Signed-By: $keyring"
  } > /etc/apt/sources.list.d/tart-kubelet-src.sources
  APT_UPDATED=0
}

APT_UPDATED=0
apt_update() {
  [ "$APT_UPDATED" = 1 ] && return 0
  apt-get update -qq || die "apt-get update failed (no network, or the package registry is unreachable)"
  APT_UPDATED=1
}

command -v dpkg-query >/dev/null || die "dpkg-query not found: this script needs a Debian machine (bookworm)"

# Warm path: nothing to install or build, so neither root nor network is needed.
if have_pkgs && have_all; then
  log "cached: $KUBE_CACHE/bin ($BINS) v$KUBE_VERSION"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "must run as root to install Debian packages and build (missing: $(missing_what))"
command -v apt-get >/dev/null || die "apt-get not found: this script needs a Debian machine (bookworm)"
command -v flock >/dev/null || die "flock not found (util-linux)"

# One build at a time per cache: a second caller (another test binary, another engineer)
# waits here, then finds the binaries cached.
mkdir -p "$(dirname "$KUBE_CACHE")"
exec 9> "$KUBE_CACHE.lock"
if ! flock -n 9; then
  log "another build.sh holds $KUBE_CACHE.lock; waiting for it"
  flock 9
fi

if ! have_pkgs; then
  apt_update
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $APT_PKGS >/dev/null \
    || die "apt-get install failed: $APT_PKGS"
fi

if have_all; then
  log "cached: $KUBE_CACHE/bin ($BINS) v$KUBE_VERSION"
  exit 0
fi

ensure_deb_src
apt_update
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
log "fetching Debian source package kubernetes=$DEB_VER"
if ! apt-get source --download-only "kubernetes=$DEB_VER" > "$work/apt-source.log" 2>&1; then
  tail -n 5 "$work/apt-source.log" >&2
  die "apt-get source kubernetes=$DEB_VER failed (no deb-src entry for it, or no network?)"
fi
tar xzf kubernetes_*.orig.tar.gz
src=$(find "$work" -maxdepth 1 -type d -name 'kubernetes-*' | head -1)
[ -d "$src" ] || die "unexpected source tarball layout"

# Fix 2: vendored reflect2 1.0.1 / json-iterator 1.1.10 segfault under Go >= 1.18 when the
# apiserver pretty-prints or emits YAML; swap in Debian's reflect2 1.0.2 / json-iterator 1.1.12.
for p in modern-go/reflect2 json-iterator/go; do
  rm -rf "$src/vendor/github.com/$p"
  mkdir -p "$src/vendor/github.com/$p"
  find "/usr/share/gocode/src/github.com/$p" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' \) \
    ! -name '*_test.go' -exec cp {} "$src/vendor/github.com/$p/" \;
done

mkdir -p "$work/gopath/src/k8s.io"
ln -s "$src" "$work/gopath/src/k8s.io/kubernetes"
export GOPATH="$work/gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
export GOCACHE=${GOCACHE:-$HOME/.cache/tart-kubelet/go-build-k8s120}
cd "$work/gopath/src/k8s.io/kubernetes"

# Fix 1: pkg/generated/openapi is generated by upstream's Makefile (gen_openapi), not shipped.
log "generating pkg/generated/openapi"
go build -o "$work/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
dirs=$(find -H . \( -not \( \( -path './_*' -o -path './.*' -o -path ./vendor \) -prune \) \) -type f -name '*.go' \
  | sed 's|^./staging/src|vendor|; s|/[^/]*$||; s|^./||' | LC_ALL=C sort -u)
inputs=$(for d in $dirs; do find "$d" -maxdepth 1 -type f -name '*.go'; done \
  | xargs grep -l '^// *+k8s:' | grep -vE '^vendor/k8s.io/(code-generator|sample-apiserver)/' \
  | xargs grep -l '+k8s:openapi-gen=' | xargs -n1 dirname | LC_ALL=C sort -u \
  | sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)
"$work/openapi-gen" -i "$inputs" -p k8s.io/kubernetes/pkg/generated/openapi -O zz_generated.openapi \
  -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r "$work/violations.report" 2>/dev/null

ld="-s -w"
for p in k8s.io/kubernetes/vendor/k8s.io/component-base/version k8s.io/kubernetes/vendor/k8s.io/client-go/pkg/version; do
  ld="$ld -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=20 -X $p.gitTreeState=clean"
  ld="$ld -X $p.gitCommit=faecb196815e248d3ecfb03c680a4507229c2a56 -X $p.buildDate=2021-01-13T00:00:00Z"
done
mkdir -p "$KUBE_CACHE/bin.tmp"
for c in $BINS; do
  log "building $c"
  go build -tags selinux,notest -trimpath -ldflags "$ld" -o "$KUBE_CACHE/bin.tmp/$c" "./cmd/$c"
done
rm -rf "${KUBE_CACHE:?}/bin"
mv "$KUBE_CACHE/bin.tmp" "$KUBE_CACHE/bin"
have_all || die "built binaries do not report v$KUBE_VERSION"
log "built: $KUBE_CACHE/bin ($BINS)"
exit
}
