// Generates the benchmark's Prisma client into src/prisma/generated, skipped when the schema and the
// Prisma version are unchanged (the same approach as packages/prisma/test/generate-client.ts).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const schema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
const output = fileURLToPath(new URL('./generated', import.meta.url));

/**
 * Runs `prisma generate` unless the stamp says the client is current. An empty executable named by
 * `PRISMA_SCHEMA_ENGINE_BINARY` stops the CLI from downloading an engine `generate` does not use.
 *
 * @example
 * ```ts
 * await generatePrismaClient();
 * const { PrismaClient } = await import('./generated/client.ts');
 * ```
 */
export async function generatePrismaClient(): Promise<void> {
  const require = createRequire(import.meta.url);
  const cli = require.resolve('prisma/build/index.js');
  const { version } = JSON.parse(await readFile(require.resolve('prisma/package.json'), 'utf8')) as {
    version: string;
  };
  const stampFile = join(output, '.stamp');
  const stamp = createHash('sha256')
    .update(`${version}\n${await readFile(schema, 'utf8')}`)
    .digest('hex');
  if ((await readFile(stampFile, 'utf8').catch(() => '')) === stamp) return;
  const dir = await mkdtemp(join(tmpdir(), 'pglock-bench-prisma-'));
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

if (process.argv[1] === fileURLToPath(import.meta.url)) await generatePrismaClient();
