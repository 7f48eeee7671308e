# The oldest Prisma the peer range admits (7.0.0; the workspace tests 7.10): @pglock/prisma's
# conformance and Prisma-specific suites against PostgreSQL 15 (DATABASE_URL) and the embedded
# PostgreSQL 18. Reports go to $RESULTS_DIR.
set -e
bash packages/prisma/scripts/test-prisma-oldest.sh "$RESULTS_DIR/prisma-oldest-pg15.json"
env -u DATABASE_URL bash packages/prisma/scripts/test-prisma-oldest.sh "$RESULTS_DIR/prisma-oldest-pg18.json"
