import { defineProject } from 'vitest/config';

// Standalone, so the folder's tests run as they are once copied out of the repository. In the
// repository the root config adds its global setup (one database for every project); `@pglock/source`
// runs the pglock packages from their sources there, and selects nothing elsewhere.
export default defineProject({
  resolve: { conditions: ['@pglock/source'] },
  ssr: { resolve: { conditions: ['@pglock/source'] } },
  test: {
    name: 'example-drizzle-scheduler',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
