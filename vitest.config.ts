import { defineConfig } from 'vitest/config';

// One run over every package: the global setup starts PostgreSQL once (or uses DATABASE_URL) and
// hands the URL to every project through `provide`/`inject('databaseUrl')`.
export default defineConfig({
  test: {
    projects: ['packages/*', 'examples/*'],
    globalSetup: ['./packages/test-kit/src/global-setup.ts'],
  },
});
