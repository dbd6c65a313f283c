#!/usr/bin/env bash
# Usage: .ci/nodes.sh VERSION. Prints the bin directory of Node VERSION. The machine's own Node serves
# when it is that version; otherwise the official binary comes from the npm registry, where each Node
# release is published as the package node-<platform>-<arch> (npm checks its integrity), and is kept
# in .ci/.nodes/VERSION for the next run.
set -euo pipefail
version=$1
if [ "$(node --version)" = "v$version" ]; then
  dirname "$(command -v node)"
  exit 0
fi
dir="$(cd "$(dirname "$0")" && pwd)/.nodes/$version"
if [ ! -x "$dir/bin/node" ]; then
  package="node-$(node -p process.platform)-$(node -p process.arch)@$version"
  echo "ci: fetching $package from the npm registry" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$package" >/dev/null)
  mkdir -p "$dir"
  tar xzf "$tmp"/*.tgz -C "$dir" --strip-components=1 package/bin/node
  rm -rf "$tmp"
fi
[ "$("$dir/bin/node" --version)" = "v$version" ] || { echo "ci: $dir/bin/node is not v$version" >&2; exit 1; }
echo "$dir/bin"
