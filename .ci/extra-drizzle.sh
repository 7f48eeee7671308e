# @pglock/drizzle against the ends of its peer range: drizzle-orm 0.44 (oldest) and Drizzle 1.0's
# release candidate, on Node 20 against PostgreSQL 15 (DATABASE_URL); the workspace's 0.45 runs in
# the main test run. Both run even when the first fails. Reports go to $RESULTS_DIR.
status=0
bash packages/drizzle/scripts/test-drizzle.sh 0.44.7 "$RESULTS_DIR/drizzle-orm-0.44.7-pg15.json" || status=1
bash packages/drizzle/scripts/test-drizzle.sh 1.0.0-rc.5 "$RESULTS_DIR/drizzle-orm-1.0.0-rc.5-pg15.json" || status=1
exit $status
