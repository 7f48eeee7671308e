// `prisma generate` needs no schema engine, but the CLI downloads one first when none is installed,
// which fails offline (CI). PRISMA_SCHEMA_ENGINE_BINARY naming an empty executable stops the
// download; it is made in a temporary folder, so that no binary is kept in the repository.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Calls `run` with the path of an empty executable to pass as `PRISMA_SCHEMA_ENGINE_BINARY`, and
 * removes it when `run` settles.
 *
 * @example
 * ```ts
 * await withEmptySchemaEngine((engine) => generate({ PRISMA_SCHEMA_ENGINE_BINARY: engine }));
 * ```
 */
export async function withEmptySchemaEngine<T>(run: (engine: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'pglock-bench-prisma-'));
  try {
    const engine = join(dir, 'schema-engine');
    await writeFile(engine, '', { mode: 0o755 });
    return await run(engine);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
