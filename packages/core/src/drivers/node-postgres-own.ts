import type { ControlConnection } from '../lock-port.ts';
import {
  isNodePostgresPool,
  type NodePostgresClient,
  type NodePostgresPool,
  type NodePostgresStandaloneClient,
  queryNodePostgres,
} from './node-postgres-client.ts';

/** A client opened by {@link openNodePostgresClient}, and how to close it (never rejects). */
export interface OpenedNodePostgresClient {
  readonly client: NodePostgresStandaloneClient;
  end(): Promise<void>;
}

/**
 * Opens a client outside any pool with the settings of `source`: a `pg.Pool`'s `options` and
 * `Client` class, or a `pg.Client`'s `connectionParameters`. For a cancel or a pooler probe that must
 * work while every pooled connection is busy, and for a connection that must be closable on its own.
 * `onClose` hears its `'error'` and `'end'`.
 *
 * @example
 * ```ts
 * import { openNodePostgresClient, queryNodePostgres } from '@pglock/core/drivers/node-postgres';
 *
 * const own = await openNodePostgresClient(pool);
 * const control = { query: (s) => queryNodePostgres(own.client, s), release: own.end };
 * ```
 */
export async function openNodePostgresClient(
  source: NodePostgresPool | NodePostgresClient,
  onClose: (error?: Error) => void = () => undefined,
): Promise<OpenedNodePostgresClient> {
  type Settings = { readonly connectionParameters?: object; readonly options?: object };
  const { Client } = source as NodePostgresPool;
  const { connectionParameters, options } = source as Settings;
  const ClientClass = isNodePostgresPool(source)
    ? Client
    : (source.constructor as NodePostgresPool['Client']);
  if (typeof ClientClass !== 'function') {
    throw new Error('a connection outside the pool needs a pg.Pool or a pg.Client (their settings open one)');
  }
  const client = new ClientClass(isNodePostgresPool(source) ? options : connectionParameters);
  client.on('error', onClose);
  client.on('end', onClose);
  await client.connect();
  return { client, end: () => client.end().catch(() => undefined) };
}

/**
 * A small pool of pglock's own, of a `pg.Pool`'s class and settings, for control statements (a
 * cancel by backend pid): outside the app's pool, since a cancel must work while every pooled
 * connection waits; one connection, closed when idle for 10 s, never keeping the process alive.
 */
export interface NodePostgresControlPool {
  /** Its connection, once the pool is made; release leaves it in the pool. */
  connection(): Promise<ControlConnection>;
  /** Connects ahead of need, so that a cancel needs no connection setup (best effort: never fails). */
  warm(): void;
}

interface ControlPool {
  readonly connection: ControlConnection;
  warm(): Promise<void>;
}

const controlPools = new WeakMap<object, Promise<ControlPool>>();

/**
 * The {@link NodePostgresControlPool} of `key`, made once over the `pg.Pool` that `source` finds
 * (it may have to open something to find it); a failure is not kept, so the next use tries again.
 *
 * @example
 * ```ts
 * import { nodePostgresControlPool } from '@pglock/core/drivers/node-postgres';
 *
 * const control = nodePostgresControlPool(db, () => db.pool);
 * control.warm();
 * const connection = await control.connection();
 * ```
 */
export function nodePostgresControlPool(key: object, source: () => unknown): NodePostgresControlPool {
  const pool = (): Promise<ControlPool> => {
    let control = controlPools.get(key);
    if (control === undefined) {
      control = Promise.resolve().then(source).then(openControlPool);
      control.catch(() => controlPools.delete(key));
      controlPools.set(key, control);
    }
    return control;
  };
  return {
    connection: async () => (await pool()).connection,
    warm() {
      pool()
        .then((control) => control.warm())
        .catch(() => undefined);
    },
  };
}

function openControlPool(source: unknown): ControlPool {
  const app = source as NodePostgresPool | null | undefined;
  if (typeof app?.query !== 'function' || app.options === undefined) {
    throw new Error('no control connection: the driver is not node-postgres (no pg.Pool to copy)');
  }
  const Pool = app.constructor as new (
    options: object,
  ) => NodePostgresPool & {
    on(event: 'error', listener: () => void): unknown;
  };
  const pool = new Pool({ ...app.options, max: 1, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  pool.on('error', () => undefined);
  return {
    connection: { query: (s) => queryNodePostgres(pool, s), release: () => undefined },
    async warm() {
      // A failed warm-up leaves the connect to the cancel, which reports its failure.
      if (pool.totalCount === 0) (await pool.connect()).release();
    },
  };
}
