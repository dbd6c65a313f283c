#!/usr/bin/env bash
# What the coordinated-mode tests need besides etcd (.ci/etcd.sh): `faketime` (Debian's faketime),
# which runs a lockd with its wall clock minutes off while its monotonic clock stays true, as a
# machine with a wrong clock would. Idempotent; fails loudly if it still cannot be found.
set -euo pipefail

if ! command -v faketime >/dev/null 2>&1; then
  echo "ci: installing faketime" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null
fi
command -v faketime >/dev/null 2>&1 || { echo "ci: faketime is not installed" >&2; exit 1; }
