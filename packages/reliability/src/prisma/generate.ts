// Generates the Prisma subject's client into src/prisma/generated, skipped while the schema and the
// Prisma version are unchanged (the test-kit helper: no schema-engine download). The chaos CLI, the
// vitest global setup and `pnpm typecheck` run it, so a fresh clone needs no manual step.
import { fileURLToPath } from 'node:url';
import { generatePrismaClient as generate } from '@pglock/test-kit/prisma-generate';

const schema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
const output = fileURLToPath(new URL('./generated', import.meta.url));

/**
 * Runs `prisma generate` for the reliability schema unless the client is current.
 *
 * @example
 * ```ts
 * await generatePrismaClient();
 * const { PrismaClient } = await import('./generated/client.ts');
 * ```
 */
export async function generatePrismaClient(): Promise<void> {
  await generate(schema, output);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await generatePrismaClient();
