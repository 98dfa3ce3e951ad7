#!/usr/bin/env bash
# Installs the headless browser the browser tests drive (stablecoin-server/tests/common/
# browser.rs): Debian's `chromium` package, never a downloaded browser build.
# Idempotent: does nothing when /usr/bin/chromium is already there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
echo "chromium is missing: installing Debian's package"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium
/usr/bin/chromium --version
