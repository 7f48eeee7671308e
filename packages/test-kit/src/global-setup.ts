import type { TestProject } from 'vitest/node';
import { type EmbeddedServer, startEmbeddedServer } from './embedded-server.ts';
import { findPgBouncer, type PgBouncer, startPgBouncer } from './pgbouncer.ts';
import type {} from './provided-context.ts';

let server: EmbeddedServer | undefined;
const bouncers: PgBouncer[] = [];

/**
 * Vitest global setup: use `DATABASE_URL` when set, else start one embedded PostgreSQL for the
 * whole run in a temporary folder, and remove it after.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // `pnpm test:unit`: core's unit tests need no server, so none is started (a test that asks for one
  // fails on the URL, which says why).
  if (process.env.PGLOCK_NO_DATABASE === '1') {
    project.provide('databaseUrl', 'postgres://no-database.invalid/PGLOCK_NO_DATABASE');
    project.provide('databaseKind', 'external');
    project.provide('pgbouncer', { missing: 'PGLOCK_NO_DATABASE=1: no server in this run' });
    return async () => undefined;
  }
  const external = process.env.DATABASE_URL;
  if (external) {
    project.provide('databaseUrl', external);
    project.provide('databaseKind', 'external');
  } else {
    server = await startEmbeddedServer();
    project.provide('databaseUrl', server.url);
    project.provide('databaseKind', 'embedded');
  }
  const binary = findPgBouncer();
  const url = external ?? server?.url ?? '';
  if (binary) {
    bouncers.push(
      await startPgBouncer(binary, url, 'transaction'),
      await startPgBouncer(binary, url, 'session'),
    );
    project.provide('pgbouncer', { transactionUrl: bouncers[0]!.url, sessionUrl: bouncers[1]!.url });
  } else {
    project.provide('pgbouncer', {
      missing:
        process.env.PGLOCK_PGBOUNCER?.trim() === 'none'
          ? 'PGLOCK_PGBOUNCER=none: run as on a machine without PgBouncer'
          : 'PgBouncer is not installed (apt-get install pgbouncer; .ci/run does)',
    });
  }
  return async () => {
    await Promise.all(bouncers.splice(0).map((bouncer) => bouncer.stop()));
    await server?.stop();
    server = undefined;
  };
}
