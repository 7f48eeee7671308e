// Only in the Kysely 0.29 run: proves that run really loads Kysely 0.29 on Node 22.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Kysely } from 'kysely';
import { expect, it } from 'vitest';

const kyselyDir = process.env.PGLOCK_KYSELY_DIR ?? '';

it('runs on Node 22 with the Kysely 0.29 copy, for our code and the dialects alike', async () => {
  expect(process.versions.node.split('.')[0]).toBe('22');
  const manifest = JSON.parse(await readFile(join(kyselyDir, 'package.json'), 'utf8')) as { version: string };
  expect(manifest.version).toMatch(/^0\.29\./);
  // 0.29 ships one ESM build at dist/index.js (0.28 had dist/esm and dist/cjs).
  const direct = (await import(pathToFileURL(join(kyselyDir, 'dist/index.js')).href)) as {
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
