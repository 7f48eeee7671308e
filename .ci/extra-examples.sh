# Every example as a user gets it: copied out of the repository, its "workspace:*" dependencies turned
# into the packed pglock packages (everything else from the registry, at the versions its package.json
# pins), installed with npm, then `npm run typecheck`, `npm start` and `npm test` as they are, against
# DATABASE_URL. Every example is installed and typechecked at once; each then starts and tests alone.
# Everything, npm's cache included, lives in one temporary folder, removed at the end. Reports
# (vitest-style JSON, one per example and step) go to $RESULTS_DIR.
set -euo pipefail
: "${DATABASE_URL:?set DATABASE_URL}"
: "${RESULTS_DIR:?set RESULTS_DIR}"
root="$(pwd)"
work="$(mktemp -d)"
finish() {
  local code=$?
  if [ "$code" -ne 0 ] && ! ls "$RESULTS_DIR"/examples-*.json >/dev/null 2>&1; then
    echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$RESULTS_DIR/examples-setup.json"
  fi
  rm -rf "$work"
}
trap finish EXIT
export npm_config_cache="$work/npm-cache" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false

# The published packages, from packages/*/package.json (scripts/packages.mjs).
mapfile -t published < <(node scripts/packages.mjs)
started=$SECONDS
echo "[0 s] build"
# Through turbo, as .ci/extra-consumers.sh: after .ci/run's check:packages step this is a cache hit
# (29 s of tsdown when run directly).
pnpm build >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
echo "[$((SECONDS - started)) s] pack"
mkdir -p "$work/tarballs"
for name in "${published[@]}"; do
  (cd "packages/$name" && pnpm pack --pack-destination "$work/tarballs" >/dev/null)
done

report() {
  local name="$1" ok="$2"
  if [ "$ok" = 1 ]; then
    echo '{"numPassedTests":1,"numFailedTests":0,"numPendingTests":0}' >"$RESULTS_DIR/examples-$name.json"
  else
    echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$RESULTS_DIR/examples-$name.json"
  fi
}

# prepare EXAMPLE: copies it out as a user would, points its pglock dependencies at the tarballs,
# installs and typechecks it; writes what it printed to $work/EXAMPLE.log and its outcome to reports.
# No database: the examples are prepared at once (npm's downloads and tsc overlap), then run one by
# one, so that no example's start or test shares the machine with another's.
prepare() {
  local example="$1" dir="examples/$1" app="$work/$1" t0=$SECONDS
  # What a user copies: the folder without what a run leaves behind.
  mkdir -p "$app"
  (cd "$dir" && tar --exclude=node_modules --exclude=generated --exclude=out -cf - .) | (cd "$app" && tar -xf -)
  TARBALLS="$work/tarballs" POSTGRES_VERSION="$(node -p "require('$root/packages/drizzle/node_modules/postgres/package.json').version")" node -e '
    const { readdirSync, readFileSync, writeFileSync } = require("node:fs");
    const file = process.argv[1];
    const pkg = JSON.parse(readFileSync(file, "utf8"));
    const tarball = (name) => {
      const found = readdirSync(process.env.TARBALLS).find((f) => f.startsWith(`pglock-${name.slice(8)}-`));
      if (!found) throw new Error(`no tarball for ${name}`);
      return `file:${process.env.TARBALLS}/${found}`;
    };
    const mine = {};
    for (const deps of [pkg.dependencies ?? {}, pkg.devDependencies ?? {}]) {
      for (const [name, range] of Object.entries(deps)) {
        if (range.startsWith("workspace:")) deps[name] = mine[name] = tarball(name);
      }
    }
    // Every @pglock/* (an adapter peer-depends on core) from its tarball, never from the registry.
    for (const name of ["@pglock/core"]) mine[name] ??= tarball(name);
    pkg.overrides = Object.fromEntries(Object.keys(mine).map((name) => [name, mine[name]]));
    // postgres.js as the workspace tests it: the adapters peer-depend on ^3.4, and npm would pull the
    // newest on the registry (4.x) into the tree as an optional peer of drizzle-orm and refuse ours.
    pkg.overrides.postgres = process.env.POSTGRES_VERSION;
    writeFileSync(file, JSON.stringify(pkg, null, 2));
  ' "$app/package.json"
  # No install scripts: Prisma's would fetch engines, and with DATABASE_URL no embedded server starts.
  if ! (cd "$app" && npm install --ignore-scripts --no-package-lock --loglevel=error); then
    report "$example-install" 0
    echo "failed" >"$work/$example.prepared"
    return
  fi
  echo "installed in $((SECONDS - t0)) s"
  if (cd "$app" && npm run typecheck); then report "$example-typecheck" 1; else report "$example-typecheck" 0; fi
  echo "installed and typechecked in $((SECONDS - t0)) s"
  echo "ok" >"$work/$example.prepared"
}

examples=()
for dir in examples/*/; do examples+=("$(basename "$dir")"); done
echo "[$((SECONDS - started)) s] install and typecheck: ${examples[*]}, at once"
for example in "${examples[@]}"; do prepare "$example" >"$work/$example.log" 2>&1 & done
wait
status=0
for example in "${examples[@]}"; do
  echo "[$((SECONDS - started)) s] example: $example"
  cat "$work/$example.log"
  grep -q '"numFailedTests":1' "$RESULTS_DIR/examples-$example-typecheck.json" 2>/dev/null && status=1
  if [ "$(cat "$work/$example.prepared" 2>/dev/null)" != ok ]; then
    status=1
    continue
  fi
  app="$work/$example"
  args=()
  [ "$example" = demo ] && args=(-- --seconds 6)
  if (cd "$app" && npm start "${args[@]}"); then report "$example-start" 1; else report "$example-start" 0; status=1; fi
  if (cd "$app" && npm test); then report "$example-test" 1; else report "$example-test" 0; status=1; fi
done
echo "[$((SECONDS - started)) s] done"
exit $status
