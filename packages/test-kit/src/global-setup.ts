import type { TestProject } from 'vitest/node';
import { type EmbeddedServer, startEmbeddedServer } from './embedded-server.ts';
import type {} from './provided-context.ts';

let server: EmbeddedServer | undefined;

/**
 * Vitest global setup: use `DATABASE_URL` when set, else start one embedded PostgreSQL for the
 * whole run in a temporary folder, and remove it after.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide('databaseUrl', external);
    project.provide('databaseKind', 'external');
  } else {
    server = await startEmbeddedServer();
    project.provide('databaseUrl', server.url);
    project.provide('databaseKind', 'embedded');
  }
  return async () => {
    await server?.stop();
    server = undefined;
  };
}
