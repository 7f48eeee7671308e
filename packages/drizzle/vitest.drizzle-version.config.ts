import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The runs of scripts/test-drizzle.sh (drizzle-orm 0.44, 1.0): the suites where Drizzle is involved,
// one harness per driver, with `drizzle-orm` resolved to the copy in PGLOCK_DRIZZLE_ROOT for our
// code and the tests (and, through scripts/drizzle-from.mjs, for child processes and Drizzle itself).
const root = process.env.PGLOCK_DRIZZLE_ROOT;
if (!root) throw new Error('PGLOCK_DRIZZLE_ROOT must name the folder holding the drizzle-orm to test');
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
// Without the kit's worker-process tests (packages/test-kit/src/context.ts says why), unless asked
// for; migrate-with-lock's still run them.
process.env.PGLOCK_PROCESSES ??= '0';

export default defineConfig({
  resolve: {
    conditions: ['@pglock/source'],
    alias: [{ find: /^drizzle-orm(?=\/|$)/, replacement: join(root, 'node_modules/drizzle-orm') }],
  },
  ssr: { resolve: { conditions: ['@pglock/source'] } },
  test: {
    name: `drizzle-orm-${process.env.PGLOCK_DRIZZLE_VERSION ?? 'version'}`,
    root: here('.'),
    include: ['test/drizzle.test.ts', 'test/migrate-with-lock.test.ts', 'test/*.kversion.ts'],
    typecheck: { enabled: true, include: ['test/types.test-d.ts'], tsconfig: join(root, 'tsconfig.json') },
    globalSetup: [here('../test-kit/src/global-setup.ts')],
    // As the root config: the files wait on the server more than they compute.
    maxWorkers: Number(process.env.PGLOCK_TEST_WORKERS ?? 3),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
