import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The oldest-Prisma run (scripts/test-prisma-oldest.sh): the same suites, with Prisma's packages, pg
// and the generated client resolved to the copies in PGLOCK_PRISMA_DIR. Child processes of the
// multi-process suites resolve without these aliases, so they run the workspace's Prisma.
const dir = process.env.PGLOCK_PRISMA_DIR;
if (!dir) throw new Error('PGLOCK_PRISMA_DIR must name the folder with the Prisma version to test');
// The `family` lane (packages/test-kit/src/lanes.ts), unless the caller chose another.
process.env.PGLOCK_LANE ??= 'family';
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    conditions: ['@pglock/source'],
    alias: [
      { find: /^@prisma\/client(\/.*)?$/, replacement: `${dir}/node_modules/@prisma/client$1` },
      { find: /^@prisma\/adapter-pg$/, replacement: `${dir}/node_modules/@prisma/adapter-pg` },
      { find: /^pg$/, replacement: `${dir}/node_modules/pg` },
      { find: /^\.\/generated\/client\.ts$/, replacement: `${dir}/generated/client.ts` },
    ],
  },
  ssr: { resolve: { conditions: ['@pglock/source'] } },
  test: {
    name: 'prisma-oldest',
    root: here('.'),
    include: ['test/conformance.prisma.test.ts', 'test/prisma.test.ts'],
    globalSetup: [here('../test-kit/src/global-setup.ts')],
    // As the root config: the files wait on the server more than they compute.
    maxWorkers: Number(process.env.PGLOCK_TEST_WORKERS ?? 3),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
