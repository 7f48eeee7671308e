import { generateClient, testOutput, testSchema } from './generate-client.ts';

/** Vitest global setup of this project: the generated client must exist before tests and child processes import it. */
export default async function setup(): Promise<void> {
  await generateClient(testSchema, testOutput);
}
