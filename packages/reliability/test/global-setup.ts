import { generatePrismaClient } from '../src/prisma/generate.ts';

/** The Prisma subject imports this package's generated client, which must exist before any test. */
export default async function setup(): Promise<void> {
  await generatePrismaClient();
}
