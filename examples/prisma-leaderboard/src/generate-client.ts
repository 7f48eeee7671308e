// Generates this example's Prisma client into src/generated (gitignored), with no schema-engine
// download (see generatePrismaClient). Skipped while the schema and the Prisma version are unchanged.
import { fileURLToPath } from 'node:url';
import { generatePrismaClient } from '@pglock/test-kit/prisma-generate';

const schema = fileURLToPath(new URL('../prisma/schema.prisma', import.meta.url));
const output = fileURLToPath(new URL('./generated', import.meta.url));

/** Runs `prisma generate` for the example's schema unless it is up to date. */
export async function generateClient(): Promise<void> {
  await generatePrismaClient(schema, output);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await generateClient();
