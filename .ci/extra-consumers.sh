# The published packages as users get them: build, pack each into a tarball, and install the tarballs
# (with the ORMs at the versions the lockfile tests) into a fresh CommonJS app outside the repository.
# There: a plain require() app run without require(esm) (as Node 20.11–20.18), a typecheck with
# `module: node16` and one with `module: commonjs`, and a Jest + ts-jest test, on TypeScript 5.9; then
# on TypeScript 7 (the native compiler, installed beside 5.9 as `typescript7`): the same two
# typechecks (`module: commonjs` with TypeScript 7's own resolution: `node10` is gone), the Jest test's
# typecheck, and the Jest test with @swc/jest (ts-jest 29 cannot load TypeScript 7: it needs the
# compiler API 7.0 does not have, and its peer range stops at <7). Real locks against DATABASE_URL. Everything, npm's cache included, lives in one temporary folder, removed at the end.
# Reports (vitest-style JSON) go to $RESULTS_DIR.
set -euo pipefail
: "${DATABASE_URL:?set DATABASE_URL}"
: "${RESULTS_DIR:?set RESULTS_DIR}"
root="$(pwd)"
fixtures="$root/.ci/consumers"
work="$(mktemp -d)"
# A run that stops before its checks (a package that does not build or install) counts as a failure.
finish() {
  local code=$?
  if [ "$code" -ne 0 ] && ! ls "$RESULTS_DIR"/consumers-*.json >/dev/null 2>&1; then
    echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$RESULTS_DIR/consumers-setup.json"
  fi
  rm -rf "$work"
}
trap finish EXIT
export npm_config_cache="$work/npm-cache" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# The published packages, from packages/*/package.json (scripts/packages.mjs).
mapfile -t published < <(node scripts/packages.mjs)
started=$SECONDS
step() { echo "[$((SECONDS - started)) s] $*"; }
step "build"
# Through turbo: after .ci/run's check:packages step this is a cache hit.
pnpm build >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

step "pack"
mkdir -p "$work/tarballs"
for name in "${published[@]}"; do
  # pnpm pack turns workspace: ranges into the versions they stand for, as publishing does.
  (cd "packages/$name" && pnpm pack --pack-destination "$work/tarballs" >/dev/null)
done

# The versions the repository's own tests run, from the lockfile's install.
version() { node -p "require('$root/packages/$1/node_modules/$2/package.json').version"; }
pg_version="$(version pg pg)"
types_pg_version="$(version pg @types/pg)"
drizzle_version="$(version drizzle drizzle-orm)"
# postgres.js, which the Drizzle and Kysely adapters peer-depend on (^3.4): pinned, since npm would
# otherwise pull the registry's newest (4.x since December 2026) into the tree and refuse the peer.
postgres_version="$(version drizzle postgres)"
kysely_version="$(version kysely kysely)"
prisma_client_version="$(version prisma @prisma/client)"
otel_api_version="$(version otel @opentelemetry/api)"
typescript_version="$(node -p "require('$root/node_modules/typescript/package.json').version")"
types_node_version="$(node -p "require('$root/node_modules/@types/node/package.json').version")"
jest_version=30.5.2
ts_jest_version=29.4.15
types_jest_version=30.0.0
typescript7_version=7.0.2
swc_core_version=1.16.22
swc_jest_version=0.2.39

app="$work/app"
mkdir -p "$app"
cp "$fixtures"/* "$app/"
# No "type" field: a CommonJS app. Overrides pin every @pglock/* to its tarball, so nothing of ours can
# come from the registry.
export TARBALLS="$work/tarballs" pg_version postgres_version drizzle_version kysely_version prisma_client_version \
  otel_api_version typescript_version types_node_version types_pg_version jest_version ts_jest_version \
  types_jest_version typescript7_version swc_core_version swc_jest_version
node -e '
  const { readdirSync, writeFileSync } = require("node:fs");
  const env = process.env;
  const mine = {};
  for (const file of readdirSync(env.TARBALLS)) {
    mine[`@pglock/${file.replace(/^pglock-/, "").replace(/-\d+\.\d+\.\d+.*$/, "")}`] = `file:${env.TARBALLS}/${file}`;
  }
  writeFileSync(process.argv[1], JSON.stringify({
    name: "pglock-consumer", version: "0.0.0", private: true,
    dependencies: {
      ...mine, pg: env.pg_version, postgres: env.postgres_version, "drizzle-orm": env.drizzle_version, kysely: env.kysely_version,
      "@prisma/client": env.prisma_client_version, "@opentelemetry/api": env.otel_api_version,
    },
    devDependencies: {
      typescript: env.typescript_version, "@types/node": env.types_node_version, "@types/pg": env.types_pg_version,
      jest: env.jest_version, "ts-jest": env.ts_jest_version, "@types/jest": env.types_jest_version,
      typescript7: `npm:typescript@${env.typescript7_version}`,
      "@swc/core": env.swc_core_version, "@swc/jest": env.swc_jest_version,
    },
    overrides: Object.fromEntries(Object.keys(mine).map((name) => [name, `$${name}`])),
  }, null, 2));
' "$app/package.json"
step "install (pg $pg_version, drizzle-orm $drizzle_version, kysely $kysely_version, @prisma/client $prisma_client_version, typescript $typescript_version and $typescript7_version, jest $jest_version, ts-jest $ts_jest_version, @swc/jest $swc_jest_version)"
# No install scripts: Prisma's would fetch engines, and importing the extension needs none.
(cd "$app" && npm install --ignore-scripts --no-package-lock --loglevel=error >"$work/install.log" 2>&1) ||
  { cat "$work/install.log"; exit 1; }

status=0
step "CommonJS app (require, no require(esm))"
(cd "$app" && node --no-experimental-require-module cjs-app.cjs "$RESULTS_DIR/consumers-cjs.json") || status=1

# typecheck LABEL CONFIG [PACKAGE]: `tsc -p CONFIG` of PACKAGE (typescript, or typescript7), by path:
# both packages have a `tsc` bin.
typecheck() {
  local label="$1" config="$2" compiler="${3:-typescript}"
  step "typecheck: $label"
  if (cd "$app" && node "node_modules/$compiler/bin/tsc" -p "$config" --noEmit); then
    echo '{"numPassedTests":1,"numFailedTests":0,"numPendingTests":0}' >"$RESULTS_DIR/consumers-tsc-$label.json"
  else
    echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$RESULTS_DIR/consumers-tsc-$label.json"
    status=1
  fi
}
typecheck node16 tsconfig.node16.json
typecheck commonjs tsconfig.commonjs.json

step "Jest + ts-jest"
(cd "$app" && npx jest --ci --json --outputFile="$RESULTS_DIR/consumers-jest.json") || status=1

typecheck node16-ts7 tsconfig.node16.json typescript7
typecheck commonjs-ts7 tsconfig.commonjs-ts7.json typescript7
typecheck jest-ts7 tsconfig.jest.json typescript7
step "Jest + @swc/jest"
(cd "$app" && npx jest --ci --config jest.swc.config.cjs --json --outputFile="$RESULTS_DIR/consumers-jest-swc.json") ||
  status=1
step "done"
exit $status
