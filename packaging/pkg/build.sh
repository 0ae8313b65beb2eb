#!/usr/bin/env bash
# Build a macOS installer package for tart-kubelet. macOS only: pkgbuild and productbuild
# exist nowhere else (docs/reference/host-and-conventions.md §2.4). From Linux, ship the release
# tarball and the Homebrew formula instead, or sign an existing pkg with rcodesign.
#
# Usage: packaging/pkg/build.sh <tart-kubelet binary> <version> [out.pkg]
#   SIGN_IDENTITY="Developer ID Installer: Example (TEAMID)"  sign the product (optional)
#
# The package installs
#   /usr/local/bin/tart-kubelet
#   /usr/local/share/tart-kubelet/{config.example.toml,rbac.yaml,launchd/*.plist}
#   /usr/local/etc/tart-kubelet/config.toml  (from the example, only if absent: postinstall
#                                            never overwrites an existing one)
# and its postinstall (scripts/postinstall) (re)installs the LaunchDaemon with
# `tart-kubelet install`, which waits for the old job to be gone before loading the new one.
set -euo pipefail

if [[ "$(uname -s)" != Darwin ]]; then
  echo "build.sh: pkgbuild/productbuild are macOS-only; run this on a Mac" >&2
  exit 2
fi
if [[ $# -lt 2 ]]; then
  echo "usage: $0 <tart-kubelet binary> <version> [out.pkg]" >&2
  exit 64
fi
binary=$1 version=$2 out=${3:-tart-kubelet-$version.pkg}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
identifier=dev.tart-kubelet.pkg

file "$binary" | grep -q 'Mach-O 64-bit executable arm64' || {
  echo "build.sh: $binary is not an arm64 Mach-O executable" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
install -d -m 0755 "$root/usr/local/bin" "$root/usr/local/share/tart-kubelet/launchd" \
  "$root/usr/local/etc/tart-kubelet"
install -m 0755 "$binary" "$root/usr/local/bin/tart-kubelet"
install -m 0644 "$repo/packaging/config.example.toml" "$root/usr/local/share/tart-kubelet/"
install -m 0644 "$repo/packaging/config.example.toml" "$root/usr/local/etc/tart-kubelet/config.toml.new"
install -m 0644 "$repo/packaging/kubernetes/rbac.yaml" "$root/usr/local/share/tart-kubelet/"
install -m 0644 "$repo"/launchd/*.plist "$root/usr/local/share/tart-kubelet/launchd/"
for p in "$root"/usr/local/share/tart-kubelet/launchd/*.plist; do plutil -lint "$p"; done

pkgbuild --root "$root" --identifier "$identifier" --version "$version" \
  --install-location / --scripts "$here/scripts" "$work/component.pkg"

sign=()
if [[ -n "${SIGN_IDENTITY:-}" ]]; then sign=(--sign "$SIGN_IDENTITY"); fi
# ${a[@]+...}: macOS bash 3.2 treats an empty array as unbound under set -u.
productbuild --package "$work/component.pkg" ${sign[@]+"${sign[@]}"} "$out"
echo "built $out"
