#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the status page's browser tests
# (apps/lockd/src/status-page.test.ts drives it with playwright-core; no browser download).
# The tests skip, saying why, only where it is absent; CI installs it so they always run here.
set -euo pipefail

if [ ! -x /usr/bin/chromium ]; then
  echo "ci: installing Chromium" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
/usr/bin/chromium --version >/dev/null 2>&1 || { echo "ci: /usr/bin/chromium does not run" >&2; exit 1; }
echo "ci: Chromium is installed"
