#!/usr/bin/env bash
# Makes sure the tools the release checks use on deploy/ are installed, from Debian's packages when
# missing: systemd-analyze (package systemd: `verify` and `security --offline` on the systemd unit)
# and promtool (package prometheus: `promtool test rules`, and the prometheus server that scrapes a
# real lockd cluster). Nothing is started: the tests run their own Prometheus on loopback.
set -euo pipefail

missing=()
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing+=(prometheus)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ci: installing ${missing[*]}" >&2
  apt-get update -qq
  # --no-install-recommends: prometheus alone, not its node exporter and the rest.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's postinst may start the prometheus service where systemd runs; the tests need none.
systemd-analyze --version | head -n 1
promtool --version 2>&1 | head -n 1
echo "ci: systemd-analyze and promtool are installed"
