// Only in the runs of scripts/test-kysely.sh: proves the run really loads the Kysely it names, on
// the Node it needs, for our code and for the dialects alike.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kysely } from 'kysely';
import { expect, it } from 'vitest';

const kyselyDir = process.env.PGLOCK_KYSELY_DIR ?? '';

it(`runs on Node ${process.env.PGLOCK_NODE_MAJOR} with Kysely ${process.env.PGLOCK_KYSELY_VERSION}, for our code and the dialects`, async () => {
  expect(process.versions.node.split('.')[0]).toBe(process.env.PGLOCK_NODE_MAJOR);
  const manifest = JSON.parse(await readFile(join(kyselyDir, 'package.json'), 'utf8')) as {
    version: string;
    module: string;
  };
  expect(manifest.version).toBe(process.env.PGLOCK_KYSELY_VERSION);
  // The ES module build (0.29: dist/index.js; 0.28: dist/esm/index.js).
  const direct = (await import(pathToFileURL(join(kyselyDir, manifest.module)).href)) as {
    Kysely: unknown;
    PostgresAdapter: new () => object;
  };
  expect(Kysely).toBe(direct.Kysely);
  const { PostgresJSDialect } = await import('kysely-postgres-js');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  const fake = (() => undefined) as never;
  expect(new PostgresJSDialect({ postgres: fake }).createAdapter()).toBeInstanceOf(direct.PostgresAdapter);
  expect(new PGliteDialect(fake).createAdapter()).toBeInstanceOf(direct.PostgresAdapter);
});
