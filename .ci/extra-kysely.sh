# Kysely 0.29 needs Node 22: run @pglock/kysely's suites on an npm-shipped Node 22 with Kysely 0.29,
# against PostgreSQL 15 (DATABASE_URL) and the embedded PostgreSQL 18. Reports go to $RESULTS_DIR.
set -e
bash packages/kysely/scripts/test-kysely-029.sh "$RESULTS_DIR/kysely-029-pg15.json"
env -u DATABASE_URL bash packages/kysely/scripts/test-kysely-029.sh "$RESULTS_DIR/kysely-029-pg18.json"
