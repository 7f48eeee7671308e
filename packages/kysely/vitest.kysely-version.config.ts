import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The runs of scripts/test-kysely.sh (Kysely 0.28.0, 0.29.x): the same suites, with `kysely` resolved
// to the copy in PGLOCK_KYSELY_DIR for our code and for the dialects (inlined, so that the alias
// reaches their imports too, and one copy of Kysely is loaded).
const kyselyDir = process.env.PGLOCK_KYSELY_DIR;
if (!kyselyDir) throw new Error('PGLOCK_KYSELY_DIR must name the kysely package folder to test');
// The `family` lane (packages/test-kit/src/lanes.ts), unless the caller chose another.
process.env.PGLOCK_LANE ??= 'family';
// Without the worker-process tests (packages/test-kit/src/context.ts says why), unless asked for.
process.env.PGLOCK_PROCESSES ??= '0';
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
// Its ES module build, as an ESM app loads it (a folder path would load `main`: CommonJS in 0.28).
const { module: entry } = JSON.parse(readFileSync(join(kyselyDir, 'package.json'), 'utf8')) as {
  module: string;
};

export default defineConfig({
  resolve: {
    conditions: ['@pglock/source'],
    alias: [{ find: /^kysely$/, replacement: join(kyselyDir, entry) }],
  },
  ssr: { resolve: { conditions: ['@pglock/source'] } },
  test: {
    name: `kysely-${process.env.PGLOCK_KYSELY_VERSION ?? 'version'}`,
    root: here('.'),
    // One harness per driver family (the `family` lane): the other harnesses differ from these in
    // pglock's code, not in Kysely's, and run in the main test run.
    include: [
      'test/conformance.postgres-dialect-control.test.ts',
      'test/conformance.postgres-js.test.ts',
      'test/kysely-specifics.test.ts',
      'test/runtime.kversion.ts',
    ],
    globalSetup: [here('../test-kit/src/global-setup.ts')],
    server: { deps: { inline: ['kysely-postgres-js', 'kysely-pglite-dialect'] } },
    // As the root config: the files wait on the server more than they compute.
    maxWorkers: Number(process.env.PGLOCK_TEST_WORKERS ?? 3),
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
