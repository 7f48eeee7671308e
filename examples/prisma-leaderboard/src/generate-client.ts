// Generates this example's Prisma client into src/generated (gitignored). `prisma generate` needs no
// schema engine, but the CLI downloads one when missing: an empty executable named by
// PRISMA_SCHEMA_ENGINE_BINARY stops that. Skipped while the schema and the Prisma version are unchanged.
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

/** Runs `prisma generate` for the example's schema unless it is up to date. */
export async function generateClient(): Promise<void> {
  const require = createRequire(import.meta.url);
  const pkg = JSON.parse(await readFile(require.resolve('prisma/package.json'), 'utf8')) as {
    version: string;
  };
  const stampFile = join(output, '.stamp');
  const stamp = createHash('sha256')
    .update(`${pkg.version}\n${await readFile(schema, 'utf8')}`)
    .digest('hex');
  if ((await readFile(stampFile, 'utf8').catch(() => '')) === stamp) return;
  const dir = await mkdtemp(join(tmpdir(), 'pglock-prisma-example-'));
  const engine = join(dir, 'fake-schema-engine');
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
