#!/usr/bin/env bash
# Typechecks the docs' snippets and the JSDoc examples (scripts/check-doc-examples.ts) against both ends
# of every peer range, each with TypeScript 5.9 (the workspace's compiler API) and TypeScript 7 (its
# native `tsc`; 7.0 has no compiler API):
#   oldest: drizzle-orm 0.44.7, kysely 0.28.0, @prisma/client, prisma and @prisma/adapter-pg 7.0.0
#   newest: drizzle-orm 1.0.0-rc.5, kysely 0.29.9, and the workspace's Prisma (@prisma/client 7.10.0,
#           prisma and @prisma/adapter-pg 7.10.1: the newest of the range), linked
# The packages come from npm into throwaway folders under $TMPDIR, outside the workspace and its
# lockfile, and are kept for the next run (reinstalled when a version here changes). Every run goes
# on when one fails; one vitest-style JSON report per run goes to the folder given (default
# .pglock-tmp/doc-examples-reports).
# Usage: bash scripts/check-doc-examples-versions.sh [report-folder]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
reports="${1:-$root/.pglock-tmp/doc-examples-reports}"
base="${PGLOCK_SNIPPETS_TMP:-${TMPDIR:-/tmp}}"
mkdir -p "$reports"
export npm_config_update_notifier=false
typescript7=7.0.2
oldest=(drizzle-orm@0.44.7 kysely@0.28.0 @prisma/client@7.0.0 prisma@7.0.0 @prisma/adapter-pg@7.0.0)
newest=(drizzle-orm@1.0.0-rc.5 kysely@0.29.9)

# install DIR NAME@VERSION…: npm installs them into DIR unless every one is there at that version.
install() {
  local dir="$1"; shift
  local spec name missing=0
  for spec in "$@"; do
    name="${spec%@*}"
    [ "$(node -p "try { require('$dir/node_modules/$name/package.json').version } catch { '' }")" = "${spec##*@}" ] ||
      missing=1
  done
  [ "$missing" = 0 ] && return 0
  mkdir -p "$dir"
  # No install scripts: Prisma's would fetch engines, and a typecheck needs none. Optional peers are
  # not installed: the snippets' other imports come from the workspace.
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund --ignore-scripts \
    --legacy-peer-deps --loglevel=error "$@" >/dev/null
}

failed() { echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$1"; }
# check REPORT ARGS…: one run of the checker; a run that ends before its report counts as a failure.
check() {
  local report="$1"; shift
  rm -f "$report"
  "$root/node_modules/.bin/tsx" "$root/scripts/check-doc-examples.ts" --report "$report" "$@" && return 0
  [ -e "$report" ] || failed "$report"
  return 1
}

started=$SECONDS
status=0
install "$base/pglock-snippets-typescript-$typescript7" "typescript@$typescript7" || status=1
tsc7="$base/pglock-snippets-typescript-$typescript7/node_modules/typescript/bin/tsc"
for end in oldest newest; do
  dir="$base/pglock-snippets-$end"
  declare -n packages="$end"
  echo "[$((SECONDS - started)) s] $end: ${packages[*]}"
  if ! install "$dir" "${packages[@]}"; then
    failed "$reports/snippets-$end-install.json"
    status=1
    continue
  fi
  if [ "$end" = newest ]; then
    # The workspace's Prisma is the newest the range admits: linked, not downloaded again
    # (after npm, which removes what it did not install).
    mkdir -p "$dir/node_modules/@prisma"
    for name in @prisma/client @prisma/adapter-pg prisma; do
      ln -sfn "$(cd "$root/packages/prisma/node_modules/$name" && pwd -P)" "$dir/node_modules/$name"
    done
    echo "  and the workspace's @prisma/client $(node -p "require('$dir/node_modules/@prisma/client/package.json').version")"
  fi
  echo "[$((SECONDS - started)) s] $end, TypeScript 5.9"
  check "$reports/snippets-$end-ts5.json" --modules "$dir" || status=1
  echo "[$((SECONDS - started)) s] $end, TypeScript $typescript7"
  check "$reports/snippets-$end-ts7.json" --modules "$dir" --tsc "$tsc7" || status=1
done
echo "[$((SECONDS - started)) s] done"
exit $status
