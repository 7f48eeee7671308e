import { existsSync } from 'node:fs';
import { defineProject } from 'vitest/config';

// Standalone, so the folder's tests run as they are once copied out of the repository. Inside the
// pglock repository (its vitest.shared.ts two folders up) the root config adds its global setup (one
// database for every project), and the pglock packages run from their TypeScript sources through the
// repository's private `@pglock/source` export condition, in the tests and in the processes they start
// (NODE_OPTIONS). A copy runs the installed builds.
const inRepository = existsSync(new URL('../../vitest.shared.ts', import.meta.url));
const source = { conditions: ['@pglock/source'] };
const nodeOptions = `${process.env.NODE_OPTIONS ?? ''} --conditions=@pglock/source`.trim();

export default defineProject({
  ...(inRepository ? { resolve: source, ssr: { resolve: source } } : {}),
  test: {
    name: 'example-otel-tracing',
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    ...(inRepository ? { env: { NODE_OPTIONS: nodeOptions } } : {}),
  },
});
