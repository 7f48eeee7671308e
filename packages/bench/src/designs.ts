import { withLock } from '@pglock/pg';
import advisoryLock from 'advisory-lock';
import { Redis } from 'ioredis';
import pg from 'pg';
import Redlock from 'redlock';
import { nowUs, type Stamps, sleep } from './clock.ts';

/** How often the polling design retries, like the common `while (!tryLock) await sleep(…)` snippets. */
export const POLL_MS = 50;
const WORK = 'UPDATE bench_counter SET n = n + 1 WHERE id = $1';
// advisory-lock is CommonJS with `exports.default`; Node's ESM import sees the whole exports object.
const createMutex = advisoryLock.default;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * An open lock design: `cycle` takes lock `key`, does the work on `row`, releases, and stamps. Every
 * design stamps the arrival just before its lock call starts (before BEGIN, for the transaction
 * designs), so no design is timed from a later point than another.
 */
export interface DesignSession {
  cycle(row: number, key: bigint, stamps: Stamps): Promise<void>;
  /** The backend pid the design's lock waits on, when it waits on one connection of its own. */
  backendPid?(): Promise<number>;
  close(): Promise<void>;
}

/** A lock design a user might choose, opened on `connections` connections. */
export interface Design {
  readonly name: string;
  /** Waits by polling (client-side retries) rather than in a server-side queue. */
  readonly polls: boolean;
  open(url: string, connections: number): Promise<DesignSession>;
}

function pool(url: string, max: number): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max });
  p.on('error', () => undefined);
  return p;
}

/** The backend pid of a one-connection pool (its only connection, opened by now). */
async function pidOf(p: pg.Pool): Promise<number> {
  const { rows } = await p.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return rows[0]!.pid;
}

async function inTransaction(p: pg.Pool, body: (client: pg.PoolClient) => Promise<void>): Promise<void> {
  const client = await p.connect();
  try {
    await client.query('BEGIN');
    await body(client);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

const pglock: Design = {
  name: 'pglock withLock (pg)',
  polls: false,
  async open(url, connections) {
    const p = pool(url, connections);
    return {
      async cycle(row, key, s) {
        s.arrival = nowUs();
        await withLock(p, key, async (client) => {
          s.acquired = nowUs();
          await client.query(WORK, [row]);
          s.released = nowUs();
        });
      },
      backendPid: () => pidOf(p),
      close: () => p.end(),
    };
  },
};

const handWritten: Design = {
  name: 'hand-written pg_advisory_xact_lock',
  polls: false,
  async open(url, connections) {
    const p = pool(url, connections);
    return {
      cycle(row, key, s) {
        s.arrival = nowUs();
        return inTransaction(p, async (client) => {
          await client.query('SELECT pg_advisory_xact_lock($1)', [String(key)]);
          s.acquired = nowUs();
          await client.query(WORK, [row]);
          s.released = nowUs();
        });
      },
      backendPid: () => pidOf(p),
      close: () => p.end(),
    };
  },
};

const lockTable: Design = {
  name: 'lock table SELECT … FOR UPDATE',
  polls: false,
  async open(url, connections) {
    const p = pool(url, connections);
    return {
      // One lock row per work row: the hot key is row 0, uncontended loops each have their own.
      cycle(row, _key, s) {
        s.arrival = nowUs();
        return inTransaction(p, async (client) => {
          await client.query('SELECT 1 FROM bench_lock WHERE name = $1 FOR UPDATE', [`row-${row}`]);
          s.acquired = nowUs();
          await client.query(WORK, [row]);
          s.released = nowUs();
        });
      },
      close: () => p.end(),
    };
  },
};

const advisoryLockPackage: Design = {
  name: 'advisory-lock (npm)',
  polls: false,
  async open(url, connections) {
    const p = pool(url, connections);
    const mutexes = createMutex(url);
    return {
      // The package opens a new pg.Client for every lock() and ends it on unlock: that is its cost.
      async cycle(row, key, s) {
        s.arrival = nowUs();
        const unlock = await mutexes(`bench-${key}`).lock();
        s.acquired = nowUs();
        await p.query(WORK, [row]);
        s.released = nowUs();
        await unlock();
      },
      close: () => p.end(),
    };
  },
};

const redlock: Design = {
  name: 'redlock (Redis)',
  polls: true,
  async open(url, connections) {
    const p = pool(url, connections);
    const redis = new Redis(REDIS_URL, { lazyConnect: true });
    await redis.connect();
    // Redlock's defaults except that it retries until it gets the lock (its default gives up after 10).
    const locks = new Redlock([redis], { retryCount: -1 });
    return {
      async cycle(row, key, s) {
        s.arrival = nowUs();
        const lock = await locks.acquire([`bench:${key}`], 5_000);
        s.acquired = nowUs();
        await p.query(WORK, [row]);
        s.released = nowUs();
        await lock.release();
      },
      async close() {
        await p.end();
        redis.disconnect();
      },
    };
  },
};

const polling: Design = {
  name: `polling pg_try_advisory_lock (${POLL_MS} ms)`,
  polls: true,
  async open(url, connections) {
    const p = pool(url, connections);
    return {
      async cycle(row, key, s) {
        s.arrival = nowUs();
        const client = await p.connect();
        try {
          for (;;) {
            const { rows } = await client.query<{ ok: boolean }>(
              'SELECT pg_try_advisory_lock($1::text::bigint) AS ok',
              [String(key)],
            );
            if (rows[0]?.ok) break;
            await sleep(POLL_MS);
          }
          s.acquired = nowUs();
          await client.query(WORK, [row]);
          s.released = nowUs();
          await client.query('SELECT pg_advisory_unlock($1::text::bigint)', [String(key)]);
        } finally {
          client.release();
        }
      },
      close: () => p.end(),
    };
  },
};

/** Every design, pglock first, then its hand-written SQL; the index is what workers are told to run. */
export const designs: readonly Design[] = [
  pglock,
  handWritten,
  advisoryLockPackage,
  redlock,
  lockTable,
  polling,
];

/** The designs that are not pglock or its hand-written SQL: what users would pick instead. */
export const alternatives: readonly Design[] = [advisoryLockPackage, redlock, lockTable, polling];
