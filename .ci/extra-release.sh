# The release path (RELEASING.md) rehearsed without publishing: on a throwaway copy of the checkout,
# `changeset version` (one new version for the fixed group, a CHANGELOG.md per package), the build,
# `pnpm -r publish --dry-run` (only the public packages) and the packed manifests; the checkout is left
# as it was. A vitest-style JSON report goes to $RESULTS_DIR.
set -euo pipefail
: "${RESULTS_DIR:?set RESULTS_DIR}"
report="$RESULTS_DIR/release-dry-run.json"
rm -f "$report"
# A run that stops before writing its report counts as a failure.
node .ci/release-dry-run.mjs "$report" || {
  code=$?
  [ -e "$report" ] || echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$report"
  exit "$code"
}
