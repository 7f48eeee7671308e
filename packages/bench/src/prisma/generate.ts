// Generates the benchmark's Prisma client into src/prisma/generated, skipped when the schema and the
// Prisma version are unchanged (the shared test-kit helper; it needs no schema-engine download).
import { fileURLToPath } from 'node:url';
import { generatePrismaClient as generate } from '@pglock/test-kit/prisma-generate';

const schema = fileURLToPath(new URL('./schema.prisma', import.meta.url));
const output = fileURLToPath(new URL('./generated', import.meta.url));

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
  await generate(schema, output);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await generatePrismaClient();
