// Generates this example's Prisma client from prisma/schema.prisma into src/generated (gitignored),
// so that the first `start` needs no manual step; skipped while the schema and the Prisma version are
// unchanged. It is `prisma generate`, run with one setting: the CLI downloads Prisma's schema engine
// when none is installed, although generating needs none, and an empty placeholder named by
// PRISMA_SCHEMA_ENGINE_BINARY lets it work offline (CI) too.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const schema = fileURLToPath(new URL('../prisma/schema.prisma', import.meta.url));
const output = fileURLToPath(new URL('./generated', import.meta.url));

/**
 * Runs `prisma generate` unless the client in src/generated matches the schema and Prisma version;
 * `onGenerate` hears when it does (it takes a few seconds).
 *
 * @example
 * ```ts
 * await generateClient();
 * const { PrismaClient } = await import('./generated/client.ts');
 * ```
 */
export async function generateClient(onGenerate: () => void = () => undefined): Promise<void> {
  const require = createRequire(import.meta.url);
  const { version } = JSON.parse(await readFile(require.resolve('prisma/package.json'), 'utf8')) as {
    version: string;
  };
  const stampFile = join(output, '.stamp');
  const stamp = createHash('sha256')
    .update(`${version}\n${await readFile(schema, 'utf8')}`)
    .digest('hex');
  if ((await readFile(stampFile, 'utf8').catch(() => '')) === stamp) return;
  onGenerate();
  const dir = await mkdtemp(join(tmpdir(), 'prisma-generate-'));
  const engine = join(dir, 'no-schema-engine');
  try {
    await writeFile(engine, '');
    await chmod(engine, 0o755);
    await promisify(execFile)(
      process.execPath,
      [require.resolve('prisma/build/index.js'), 'generate', '--schema', schema],
      {
        env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: engine, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
      },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  await writeFile(stampFile, stamp);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await generateClient();
