#!/usr/bin/env bash
# Makes sure the PostgreSQL and Redis servers (and the openssl CLI) that the fence tests use are running on
# 127.0.0.1: starts them if stopped, installs them from Debian's packages if missing,
# and fails loudly if one still cannot be reached. Tests are never skipped for a missing server.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }
apt_ready=
apt_install() {
  [ -n "$apt_ready" ] || { apt-get update -qq; apt_ready=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! pg_up; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "ci: installing PostgreSQL" >&2
    apt_install postgresql
    # This machine kind runs PostgreSQL with trust auth on loopback; a fresh Debian install asks for
    # passwords there. Match the machine's setup (loopback only: nothing else can connect).
    hba=$(ls /etc/postgresql/*/main/pg_hba.conf | tail -n 1)
    sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  fi
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | tail -n 1)" main start || true
  # If the package's install already started it, make it read the auth rules above.
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | tail -n 1)" main reload || true
  for _ in $(seq 1 50); do pg_up && break; sleep 0.2; done
  # A fresh install has no `test` database and asks for passwords; this machine kind uses trust auth.
  if pg_up && ! su postgres -c "psql -tAc \"select 1 from pg_database where datname='test'\"" | grep -q 1; then
    su postgres -c "createdb test"
  fi
fi

if ! redis_up; then
  command -v redis-server >/dev/null 2>&1 || { echo "ci: installing Redis" >&2; apt_install redis-server; }
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 50); do redis_up && break; sleep 0.2; done
fi

# The TLS tests make a throwaway certificate with the openssl CLI.
command -v openssl >/dev/null 2>&1 || apt_install openssl

pg_up || { echo "ci: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
redis_up || { echo "ci: Redis is not reachable on 127.0.0.1:6379" >&2; exit 1; }
psql "${PG_URL:-postgres://postgres@127.0.0.1:5432/test}" -tAc 'select 1' >/dev/null ||
  { echo "ci: cannot connect to ${PG_URL:-postgres://postgres@127.0.0.1:5432/test}" >&2; exit 1; }
echo "ci: PostgreSQL and Redis are up"
