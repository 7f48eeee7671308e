import { generateClient, testOutput, testSchema } from '../../prisma/test/generate-client.ts';

/** The chaos workers import the Prisma harness, whose generated client must exist first. */
export default async function setup(): Promise<void> {
  await generateClient(testSchema, testOutput);
}
