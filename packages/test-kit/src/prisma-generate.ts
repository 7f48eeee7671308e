import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Runs `prisma generate` for `schema` into `output` (the generator's `output`), unless the stamp
 * file there says the client matches this schema and Prisma version. The `prisma` CLI is resolved
 * from the schema's own package, or from `cliFrom` (a folder whose node_modules has it) when the
 * schema is a copy outside any package. `prisma generate` needs no schema engine, but the CLI downloads
 * one when it is missing (which fails without internet): an empty executable named by
 * `PRISMA_SCHEMA_ENGINE_BINARY` stops that, with no binary in the repository. Returns whether it ran.
 */
export async function generatePrismaClient(
  schema: string,
  output: string,
  cliFrom?: string,
): Promise<boolean> {
  const require = createRequire(cliFrom === undefined ? schema : join(cliFrom, 'package.json'));
  const { version } = JSON.parse(await readFile(require.resolve('prisma/package.json'), 'utf8')) as {
    version: string;
  };
  const stampFile = join(output, '.stamp');
  const stamp = createHash('sha256')
    .update(`${version}\n${await readFile(schema, 'utf8')}`)
    .digest('hex');
  if ((await readFile(stampFile, 'utf8').catch(() => '')) === stamp) return false;
  const dir = await mkdtemp(join(tmpdir(), 'pglock-prisma-'));
  const engine = join(dir, 'no-schema-engine');
  try {
    await writeFile(engine, '');
    await chmod(engine, 0o755);
    await run(process.execPath, [require.resolve('prisma/build/index.js'), 'generate', '--schema', schema], {
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: engine, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  await writeFile(stampFile, stamp);
  return true;
}
