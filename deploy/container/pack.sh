#!/usr/bin/env bash
# Usage: deploy/container/pack.sh DIR. Builds the repository and packs lockd and the workspace
# packages it needs at run time (its production dependencies, followed through the workspace) into
# DIR: the build context of deploy/container/Dockerfile. Once lockd is on the npm registry, the
# tarball of `npm pack lockd@VERSION` and its @lock/* dependencies do the same.
set -euo pipefail
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/../.."
pnpm run build >/dev/null
pnpm --filter-prod "lockd..." exec pnpm pack --pack-destination "$out" >/dev/null
ls "$out"
