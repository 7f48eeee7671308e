// Generates the test schema's Prisma client into test/generated, for the tests (vitest global setup)
// and for `pnpm typecheck` (the package's typecheck script runs this file first), so that a clean
// clone needs no manual step. Skipped when the schema and the Prisma version are unchanged.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Runs `prisma generate` for `schema` unless its stamp says it is up to date. `prisma generate`
 * does not need the schema engine, but the CLI downloads it when missing; an empty executable named
 * by `PRISMA_SCHEMA_ENGINE_BINARY` stops that (no network, no binary in the repo).
 */
export async function generateClient(schema: string, output: string): Promise<void> {
  const require = createRequire(import.meta.url);
  const cli = require.resolve('prisma/build/index.js');
  const version = (
    JSON.parse(await readFile(require.resolve('prisma/package.json'), 'utf8')) as { version: string }
  ).version;
  const stampFile = join(output, '.stamp');
  const stamp = createHash('sha256')
    .update(`${version}\n${await readFile(schema, 'utf8')}`)
    .digest('hex');
  if ((await readFile(stampFile, 'utf8').catch(() => '')) === stamp) return;

  const dir = await mkdtemp(join(tmpdir(), 'pglock-prisma-'));
  const engine = join(dir, 'fake-schema-engine');
  try {
    await writeFile(engine, '');
    await chmod(engine, 0o755);
    await run(process.execPath, [cli, 'generate', '--schema', schema], {
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: engine, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  await writeFile(stampFile, stamp);
}

/** The test schema of this package. */
export const testSchema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
export const testOutput = fileURLToPath(new URL('./generated', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) await generateClient(testSchema, testOutput);
