# @pglock/kysely against the ends of its peer range: Kysely 0.29 (newest; needs Node 22, run on an
# npm-shipped Node 22) and Kysely 0.28.0 (oldest) on Node 20, against PostgreSQL 15 (DATABASE_URL),
# one harness per driver family (the `family` lane; the second server version runs in .ci/run's
# PostgreSQL 18 lane). Both run even when the first fails. Reports go to $RESULTS_DIR.
status=0
bash packages/kysely/scripts/test-kysely.sh 0.29.9 "$RESULTS_DIR/kysely-0.29.9-pg15.json" || status=1
bash packages/kysely/scripts/test-kysely.sh 0.28.0 "$RESULTS_DIR/kysely-0.28.0-pg15.json" || status=1
exit $status
