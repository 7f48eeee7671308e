// Generates the Prisma instance's client into src/generated (gitignored), so that a fresh clone needs
// no manual step: main.ts runs it before starting the instances, and `pnpm typecheck` before tsc.
// Skipped while the schema and the Prisma version are unchanged (see generatePrismaClient).
import { fileURLToPath } from 'node:url';
import { generatePrismaClient } from '@pglock/test-kit/prisma-generate';

const schema = fileURLToPath(new URL('../prisma/schema.prisma', import.meta.url));
const output = fileURLToPath(new URL('./generated', import.meta.url));

/** Runs `prisma generate` unless the client is current; `onGenerate` hears when it does. */
export async function generateClient(onGenerate: () => void = () => {}): Promise<void> {
  onGenerate();
  await generatePrismaClient(schema, output);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await generateClient();
