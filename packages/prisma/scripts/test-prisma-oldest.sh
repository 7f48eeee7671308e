#!/usr/bin/env bash
# Runs @pglock/prisma's conformance and Prisma-specific suites against the oldest Prisma 7 minor the
# peer range admits (the workspace tests the newest). @prisma/client, prisma and @prisma/adapter-pg of
# that version come from npm into a throwaway folder, outside the workspace and its lockfile; the
# test schema's client is generated there with that version's CLI. Uses DATABASE_URL when set, else
# the embedded PostgreSQL.
# Usage: bash packages/prisma/scripts/test-prisma-oldest.sh [json-report-path]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/../.." && pwd)"
version="7.0.0" # keep in step with the peer range's lower bound in package.json
report="${1:-$root/.pglock-tmp/prisma-$version.json}"
dir="${PGLOCK_PRISMA_OLDEST_DIR:-${TMPDIR:-/tmp}/pglock-prisma-$version}"
mkdir -p "$dir" "$(dirname "$report")"
# pg as the workspace has it, so that the test pools and the adapter share one pg (PrismaPg checks
# `instanceof pg.Pool`).
pg_version="$(node -p "require('$root/packages/prisma/node_modules/pg/package.json').version")"
npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
  "@prisma/client@$version" "prisma@$version" "@prisma/adapter-pg@$version" "pg@$pg_version" >/dev/null
cp "$here/test/schema.prisma" "$dir/schema.prisma"
cd "$here"
# The workspace's client too: the multi-process suites' workers import it (see the config), and on a
# fresh clone nothing else may have generated it yet.
node --conditions=@pglock/source --import tsx test/generate-client.ts
node --conditions=@pglock/source --import tsx --input-type=module -e "
  const { generatePrismaClient } = await import('@pglock/test-kit/prisma-generate');
  await generatePrismaClient('$dir/schema.prisma', '$dir/generated');
"
cd "$root"
PGLOCK_PRISMA_DIR="$dir" node "$root/node_modules/vitest/vitest.mjs" run \
  --config "$here/vitest.prisma-oldest.config.ts" --reporter=default --reporter=json --outputFile="$report"
