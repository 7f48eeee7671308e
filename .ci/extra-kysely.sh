# @pglock/kysely against the ends of its peer range: Kysely 0.29 (newest; needs Node 22, run on an
# npm-shipped Node 22) against PostgreSQL 15 (DATABASE_URL) and the embedded PostgreSQL 18, and
# Kysely 0.28.0 (oldest) on Node 20 against PostgreSQL 15. Reports go to $RESULTS_DIR.
set -e
bash packages/kysely/scripts/test-kysely.sh 0.29.9 "$RESULTS_DIR/kysely-0.29.9-pg15.json"
env -u DATABASE_URL bash packages/kysely/scripts/test-kysely.sh 0.29.9 "$RESULTS_DIR/kysely-0.29.9-pg18.json"
bash packages/kysely/scripts/test-kysely.sh 0.28.0 "$RESULTS_DIR/kysely-0.28.0-pg15.json"
