// Generates the benchmark's Prisma client into src/prisma/generated (gitignored), so that a fresh
// clone runs without a manual step; skipped while the schema and the Prisma version are those the
// stamp file beside the client was written for (generating takes seconds, `typecheck` runs it too).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { withEmptySchemaEngine } from './empty-schema-engine.ts';

const schema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
const stampFile = fileURLToPath(new URL('./generated/.stamp', import.meta.url));

/**
 * Runs `prisma generate` for the benchmark's schema unless the client is current.
 *
 * @example
 * ```ts
 * await generatePrismaClient();
 * const { PrismaClient } = await import('./generated/client.ts');
 * ```
 */
export async function generatePrismaClient(): Promise<void> {
  const require = createRequire(import.meta.url);
  const { version } = require('prisma/package.json') as { version: string };
  const stamp = createHash('sha256')
    .update(`prisma ${version}\n`)
    .update(await readFile(schema))
    .digest('hex');
  if (stamp === (await readFile(stampFile, 'utf8').catch(() => undefined))) return;
  const cli = require.resolve('prisma/build/index.js');
  await withEmptySchemaEngine((engine) =>
    promisify(execFile)(process.execPath, [cli, 'generate', '--schema', schema], {
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: engine, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    }),
  );
  await writeFile(stampFile, stamp);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await generatePrismaClient();
