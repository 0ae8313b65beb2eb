# Installs tart-kubelet's guest launcher and starts it as a LaunchDaemon (docs/guest.md,
# "Delivery"). Run as root (`sudo -n /bin/sh -c <this> <name> <mode> <launcher> <plist>`)
# through the Tart Guest Agent. $1: `if-missing` keeps an image's own launcher (the plist is
# present: launchd started it at boot), `always` stops it and installs the shipped one. $2, $3:
# the launcher's and the plist's bytes. Prints `image` or `installed`. TART_GUEST_ROOT
# (fake-tart's guest root) prefixes every path; a real guest has none.
set -eu
umask 022
PATH=$PATH:/bin:/usr/bin:/sbin:/usr/sbin
R=${TART_GUEST_ROOT:-}
LABEL=dev.tart-kubelet.guest-launcher
DIR="$R/usr/local/libexec/tart-guest"
BIN="$DIR/tart-guest-launcher"
DAEMONS="$R/Library/LaunchDaemons"
PLIST="$DAEMONS/$LABEL.plist"
if [ "$1" = if-missing ] && [ -f "$PLIST" ]; then
  echo image
  exit 0
fi
launchctl bootout "system/$LABEL" >/dev/null 2>&1 || :
mkdir -p "$DIR" "$DAEMONS"
printf '%s' "$2" >"$BIN.new"
chmod 0755 "$BIN.new"
mv -f "$BIN.new" "$BIN"
printf '%s' "$3" >"$PLIST.new"
chmod 0644 "$PLIST.new"
# launchd refuses a plist that is not root's; fake-tart's guest root has no root to own it.
[ -n "$R" ] || chown 0:0 "$BIN" "$PLIST.new"
mv -f "$PLIST.new" "$PLIST"
# A plist launchd refused must not be taken for the image's own launcher next time.
launchctl bootstrap system "$PLIST" || {
  rm -f "$PLIST"
  exit 1
}
echo installed
