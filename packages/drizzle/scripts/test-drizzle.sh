#!/usr/bin/env bash
# Runs @pglock/drizzle's suites with another drizzle-orm release than the workspace's (0.45.4): the
# oldest of the peer range (0.44.x) and Drizzle 1.0's release candidate. drizzle-orm comes from npm
# into a throwaway folder, outside the workspace and its lockfile, beside links to the workspace's
# pg, postgres and PGlite (Drizzle must load the very pg the tests load: 0.44 tells a pg.Pool by
# `instanceof`). Uses DATABASE_URL when set, else the embedded PostgreSQL.
# Usage: bash packages/drizzle/scripts/test-drizzle.sh <drizzle-orm-version> [json-report-path]
set -euo pipefail
version="${1:?usage: test-drizzle.sh <drizzle-orm-version> [json-report-path]}"
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
report="${2:-$root/.pglock-tmp/drizzle-$version.json}"
dir="${PGLOCK_DRIZZLE_TMP:-${TMPDIR:-/tmp}}/pglock-drizzle-$version"
mkdir -p "$dir/node_modules/@types" "$dir/node_modules/@electric-sql" "$(dirname "$report")"
# Exact version: the peer range in package.json says what was tested. Its optional peers are the
# workspace's, linked below, not installed.
if [ "$(node -p "try { require('$dir/node_modules/drizzle-orm/package.json').version } catch { '' }")" != "$version" ]; then
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --legacy-peer-deps \
    --loglevel=error "drizzle-orm@$version" >/dev/null
fi
for pkg in pg postgres @types/pg @electric-sql/pglite; do
  ln -sfn "$(cd "$here/node_modules/$pkg" && pwd -P)" "$dir/node_modules/$pkg"
done
# The type tests, against this release's declarations.
cat >"$dir/tsconfig.json" <<JSON
{
  "extends": "$here/tsconfig.json",
  "compilerOptions": {
    "typeRoots": ["$root/node_modules/@types"],
    "paths": {
      "drizzle-orm": ["$dir/node_modules/drizzle-orm/index.d.ts"],
      "drizzle-orm/*": ["$dir/node_modules/drizzle-orm/*.d.ts", "$dir/node_modules/drizzle-orm/*/index.d.ts"]
    }
  },
  "include": ["$here/src", "$here/test/types.test-d.ts"]
}
JSON
cd "$root"
# Child processes (the kit's workers, the migrators) resolve drizzle-orm there too.
PGLOCK_DRIZZLE_ROOT="$dir" PGLOCK_DRIZZLE_VERSION="$version" \
  NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--import=$here/scripts/drizzle-from.mjs" \
  node "$root/node_modules/vitest/vitest.mjs" run \
  --config "$here/vitest.drizzle-version.config.ts" --reporter=default --reporter=json --outputFile="$report"
