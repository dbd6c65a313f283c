#!/usr/bin/env bash
# Makes sure the `etcd` binary (Debian's etcd-server) is installed: the coordinator tests start their
# own etcd members and clusters on free loopback ports (packages/testkit/src/etcd.ts), so no server
# runs here. Idempotent; fails loudly if etcd still cannot be found.
set -euo pipefail

if ! command -v etcd >/dev/null 2>&1; then
  echo "ci: installing etcd" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  # The package may start a system etcd on 2379 (systemd, or its init script where policy allows);
  # the tests never use it, and it would only hold a port and a data directory.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >/dev/null 2>&1 || true; fi
  if [ -x /etc/init.d/etcd ]; then /etc/init.d/etcd stop >/dev/null 2>&1 || true; fi
fi
command -v etcd >/dev/null 2>&1 || { echo "ci: etcd is not installed" >&2; exit 1; }
echo "ci: $(etcd --version | head -n 1)"
