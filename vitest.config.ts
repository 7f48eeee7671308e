import { defineConfig } from 'vitest/config';

// CI sets PGLOCK_TEST_REPORT to a file path to get a JSON report beside the usual output (`pnpm test`
// stays the one test command; pnpm would take a `--reporter` flag for itself).
const report = process.env.PGLOCK_TEST_REPORT;

// One run over every package: the global setup starts PostgreSQL once (or uses DATABASE_URL) and
// hands the URL to every project through `provide`/`inject('databaseUrl')`.
export default defineConfig({
  test: {
    projects: ['packages/*', 'examples/*'],
    globalSetup: ['./packages/test-kit/src/global-setup.ts'],
    reporters: report ? ['default', ['json', { outputFile: report }]] : ['default'],
  },
});
