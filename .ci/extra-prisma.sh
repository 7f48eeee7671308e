# The oldest Prisma the peer range admits (7.0.0; the workspace tests 7.10): @pglock/prisma's
# conformance (the `family` lane) and Prisma-specific suites against PostgreSQL 15 (DATABASE_URL);
# the second server version runs in .ci/run's PostgreSQL 18 lane. Reports go to $RESULTS_DIR.
set -e
bash packages/prisma/scripts/test-prisma-oldest.sh "$RESULTS_DIR/prisma-oldest-pg15.json"
