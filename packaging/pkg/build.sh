#!/usr/bin/env bash
# Build a macOS installer package for tart-kubelet from a release tarball (scripts/release).
# pkgbuild and productbuild exist only on macOS (docs/reference/host-and-conventions.md §2.4);
# the staging step runs anywhere, so tests check what the package would carry.
#
# Usage: packaging/pkg/build.sh <tart-kubelet-VERSION-darwin-arm64.tar.gz> [out.pkg]
#        packaging/pkg/build.sh --stage-only <ROOT> <tarball>   stage the payload into ROOT, stop
#   SIGN_IDENTITY="Developer ID Installer: Example (TEAMID)"  sign the product (optional)
#
# The package installs every file of the tarball once:
#   /usr/local/bin/tart-kubelet
#   /usr/local/bin/tart-kubelet-uninstall          (packaging/pkg/uninstall: the uninstaller)
#   /usr/local/etc/tart-kubelet/config.toml.new    (config.example.toml; postinstall makes it
#                                                  config.toml only if there is none)
#   /usr/local/share/tart-kubelet/{guest,kubernetes,launchd,monitoring}/...
# and its postinstall (scripts/postinstall) (re)installs the LaunchDaemon with
# `tart-kubelet install`, which waits for the old job to be gone before loading the new one.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
identifier=dev.tart-kubelet.pkg

usage() {
  echo "usage: $0 <release tarball> [out.pkg] | --stage-only <root> <release tarball>" >&2
  exit 64
}

# stage ROOT TARBALL: the package payload, laid out under ROOT.
stage() {
  local root=$1 tarball=$2 src
  src=$(mktemp -d)
  tar -xzf "$tarball" -C "$src"
  src=$(echo "$src"/tart-kubelet-*-darwin-arm64)
  [[ -f $src/tart-kubelet ]] || {
    echo "build.sh: $tarball is not a tart-kubelet release tarball" >&2
    exit 1
  }
  install -d -m 0755 "$root/usr/local/bin" "$root/usr/local/share/tart-kubelet" \
    "$root/usr/local/etc/tart-kubelet"
  install -m 0755 "$src/tart-kubelet" "$root/usr/local/bin/tart-kubelet"
  install -m 0755 "$here/uninstall" "$root/usr/local/bin/tart-kubelet-uninstall"
  install -m 0644 "$src/config.example.toml" "$root/usr/local/etc/tart-kubelet/config.toml.new"
  cp -R "$src/guest" "$src/kubernetes" "$src/launchd" "$src/monitoring" \
    "$root/usr/local/share/tart-kubelet/"
  rm -rf "$(dirname "$src")"
}

if [[ ${1:-} == --stage-only ]]; then
  [[ $# -eq 3 ]] || usage
  stage "$2" "$3"
  exit 0
fi
if [[ "$(uname -s)" != Darwin ]]; then
  echo "build.sh: pkgbuild/productbuild are macOS-only; run this on a Mac" >&2
  exit 2
fi
[[ $# -ge 1 ]] || usage
tarball=$1
version=$(basename "$tarball" | sed -n 's/^tart-kubelet-\(.*\)-darwin-arm64\.tar\.gz$/\1/p')
[[ -n $version ]] || {
  echo "build.sh: $tarball is not named tart-kubelet-<version>-darwin-arm64.tar.gz" >&2
  exit 1
}
out=${2:-tart-kubelet-$version.pkg}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
stage "$root" "$tarball"
file "$root/usr/local/bin/tart-kubelet" | grep -q 'Mach-O 64-bit executable arm64' || {
  echo "build.sh: the tarball's tart-kubelet is not an arm64 Mach-O executable" >&2
  exit 1
}
for p in "$root"/usr/local/share/tart-kubelet/launchd/*.plist \
  "$root"/usr/local/share/tart-kubelet/guest/*.plist; do
  plutil -lint "$p"
done

pkgbuild --root "$root" --identifier "$identifier" --version "$version" \
  --install-location / --scripts "$here/scripts" "$work/component.pkg"

sign=()
if [[ -n "${SIGN_IDENTITY:-}" ]]; then sign=(--sign "$SIGN_IDENTITY"); fi
# ${a[@]+...}: macOS bash 3.2 treats an empty array as unbound under set -u.
productbuild --package "$work/component.pkg" ${sign[@]+"${sign[@]}"} "$out"
echo "built $out"
