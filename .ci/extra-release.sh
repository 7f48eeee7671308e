# The release path (docs/releasing.md) rehearsed on a throwaway copy of the checkout: `changeset version`
# (one new version for the fixed group, a CHANGELOG.md per package), the build, `pnpm -r publish
# --dry-run` (only the public packages) and the packed manifests; then `changeset publish` for real, to
# a Verdaccio started here on 127.0.0.1 (installed from npm, cached per machine), and the README's
# `npm install` commands against it. The checkout is left as it was. A vitest-style JSON report goes to
# $RESULTS_DIR.
set -uo pipefail
: "${RESULTS_DIR:?set RESULTS_DIR}"
report="$RESULTS_DIR/release-dry-run.json"
rm -f "$report"
work="$(mktemp -d)"
verdaccio_pid=""
finish() {
  [ -n "$verdaccio_pid" ] && kill "$verdaccio_pid" 2>/dev/null
  rm -rf "$work"
}
trap finish EXIT
fail_setup() {
  echo "release rehearsal: $1"
  echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$report"
  exit 1
}
started=$SECONDS

# A registry of our own for the publish: nothing of ours can reach npmjs from this script. Verdaccio is
# installed from npm once per machine (a cache outside the checkout; installed again when missing).
export npm_config_cache="$work/npm-cache" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
verdaccio_version=6.8.0
verdaccio="${XDG_CACHE_HOME:-$HOME/.cache}/pglock-ci/verdaccio-$verdaccio_version"
if [ ! -e "$verdaccio/node_modules/verdaccio/bin/verdaccio" ]; then
  npm install --prefix "$work/verdaccio" --loglevel=error "verdaccio@$verdaccio_version" >"$work/verdaccio-install.log" 2>&1 ||
    { cat "$work/verdaccio-install.log"; fail_setup "Verdaccio did not install"; }
  mkdir -p "$(dirname "$verdaccio")" && rm -rf "$verdaccio" && mv "$work/verdaccio" "$verdaccio"
fi
port="$(node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
cat >"$work/verdaccio.yaml" <<YAML
storage: $work/verdaccio-storage
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
packages:
  '@pglock/*':
    access: \$all
    publish: \$anonymous
  '**':
    access: \$all
    proxy: npmjs
log: { type: stdout, format: pretty, level: error }
YAML
node "$verdaccio/node_modules/verdaccio/bin/verdaccio" --config "$work/verdaccio.yaml" \
  --listen "127.0.0.1:$port" >"$work/verdaccio.log" 2>&1 &
verdaccio_pid=$!
for _ in $(seq 1 50); do
  curl -sf "http://127.0.0.1:$port/-/ping" >/dev/null && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ping" >/dev/null || { cat "$work/verdaccio.log"; fail_setup "Verdaccio did not start"; }
echo "[$((SECONDS - started)) s] Verdaccio on 127.0.0.1:$port"

PGLOCK_RELEASE_REGISTRY="http://127.0.0.1:$port/" node .ci/release-dry-run.mjs "$report"
code=$?
[ -e "$report" ] || fail_setup "the rehearsal stopped before its report"
echo "[$((SECONDS - started)) s] done"
exit $code
