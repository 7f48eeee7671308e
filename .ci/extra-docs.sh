# The docs site: `pnpm docs:build` (TypeDoc, then VitePress, which fails on a dead link; the config
# fails on a link to a missing file), then `pnpm docs:check` (every VitePress page and one API page of
# each kind in headless Chromium: renders, no console error, nothing fails to load; every API page read
# as a file; the local search finds a known term). Chromium is Debian's, installed here when missing.
# Vitest-style JSON reports go to $RESULTS_DIR.
set -uo pipefail
: "${RESULTS_DIR:?set RESULTS_DIR}"
started=$SECONDS
step() { echo "[$((SECONDS - started)) s] $*"; }
report() {
  local name="$1" ok="$2"
  echo "{\"numPassedTests\":$ok,\"numFailedTests\":$((1 - ok)),\"numPendingTests\":0}" >"$RESULTS_DIR/docs-$name.json"
}
rm -f "$RESULTS_DIR"/docs-*.json

step "chromium"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ||
    { report chromium 0; exit 1; }
fi
"${CHROMIUM:-/usr/bin/chromium}" --version

step "build (pnpm docs:build)"
if pnpm docs:build; then report build 1; else report build 0; exit 1; fi

step "browser check (pnpm docs:check)"
status=0
pnpm docs:check -- --report "$RESULTS_DIR/docs-site.json" || status=1
[ -e "$RESULTS_DIR/docs-site.json" ] || report site 0
step "done"
exit $status
