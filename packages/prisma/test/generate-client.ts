// Generates the test schema's Prisma client into test/generated, for the tests (vitest global setup)
// and for `pnpm typecheck` (the package's typecheck script runs this file first), so that a clean
// clone needs no manual step. Skipped when the schema and the Prisma version are unchanged.
import { fileURLToPath } from 'node:url';
import { generatePrismaClient } from '@pglock/test-kit/prisma-generate';

/** Runs `prisma generate` for `schema` into `output` unless it is up to date. */
export async function generateClient(schema: string, output: string): Promise<void> {
  await generatePrismaClient(schema, output);
}

/** The test schema of this package. */
export const testSchema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
export const testOutput = fileURLToPath(new URL('./generated', import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) await generateClient(testSchema, testOutput);
