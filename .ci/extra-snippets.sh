# The docs' code as users copy it, against the ends of every peer range and both TypeScript lines:
# - scripts/check-doc-examples-versions.sh: every ```ts block of the READMEs and docs/*.md and every
#   JSDoc example, typechecked with Drizzle 0.44 and 1.0.0-rc.5, Kysely 0.28.0 and 0.29, Prisma 7.0
#   and 7.10, each with TypeScript 5.9 and 7 (the workspace's own versions run in .ci/run's
#   `pnpm check:examples` stage);
# - scripts/check-doc-schemas.ts: docs/scheduling.md's pglock_jobs for Drizzle (drizzle-kit generate,
#   0.31 and 1.0 rc), Prisma (prisma validate; `prisma migrate diff` needs a schema engine that cannot
#   be downloaded here, see the script) and Kysely (its migration), each compared column by column with
#   what `pglock schema` creates, in schemas of their own in DATABASE_URL's database.
# The ORMs and TypeScript 7 come from npm into throwaway folders under $TMPDIR, kept for the next run.
# Both run even when the first fails. Reports (vitest-style JSON) go to $RESULTS_DIR.
: "${DATABASE_URL:?set DATABASE_URL}"
: "${RESULTS_DIR:?set RESULTS_DIR}"
status=0
started=$SECONDS
bash scripts/check-doc-examples-versions.sh "$RESULTS_DIR" || status=1
echo "[$((SECONDS - started)) s] the documented pglock_jobs tables"
if ! node_modules/.bin/tsx scripts/check-doc-schemas.ts --report-dir "$RESULTS_DIR"; then
  status=1
  # Stopped before any check (no database, the CLI failed): one failure.
  ls "$RESULTS_DIR"/schemas-*.json >/dev/null 2>&1 ||
    echo '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0}' >"$RESULTS_DIR/schemas-setup.json"
fi
echo "[$((SECONDS - started)) s] done"
exit $status
