import pg from 'pg';
import { sleep } from './clock.ts';
import { median, percentile } from './stats.ts';

/** One design's burst: how long it took, and what an unrelated query on the same pool waited. */
export interface StarvationRow {
  readonly design: string;
  /** Median over the rounds: from the first call to the last callback's end. */
  readonly burstMs: number;
  /** Latency of `SELECT 1` on the same pool, fired every {@link PROBE_EVERY_MS} during the burst (ms). */
  readonly probeP50Ms: number;
  readonly probeP99Ms: number;
  readonly probeMaxMs: number;
  readonly probes: number;
  /** Most pooled connections checked out at once (the pool's size is the cap). */
  readonly connectionsInUse: number;
}

export interface StarvationOptions {
  readonly url: string;
  readonly callers: number;
  readonly holdMs: number;
  readonly poolSize: number;
  readonly rounds: number;
  readonly log: (line: string) => void;
}

/** How often the unrelated query is fired during a burst (not waiting for the previous one). */
export const PROBE_EVERY_MS = 10;

type Burst = (pool: pg.Pool, key: bigint, holdMs: number) => Promise<unknown>;

async function designs(): Promise<readonly (readonly [string, Burst])[]> {
  const { withLock } = await import('@pglock/pg');
  return [
    ['pglock withLock (in-process queue)', (pool, key, holdMs) => withLock(pool, key, () => sleep(holdMs))],
    [
      // What every caller did before the in-process queue, and what hand-written SQL does: each
      // waits on the server, holding a pooled connection for the whole wait.
      'hand-written pg_advisory_xact_lock (every waiter on the server)',
      async (pool, key, holdMs) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query('SELECT pg_advisory_xact_lock($1)', [String(key)]);
          await sleep(holdMs);
          await client.query('COMMIT');
        } finally {
          client.release();
        }
      },
    ],
  ];
}

let nextKey = 1n << 42n;

async function burst(run: Burst, options: StarvationOptions) {
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolSize });
  pool.on('error', () => undefined);
  try {
    // Open the pool's connections first: the burst measures waiting, not connecting.
    const warm = await Promise.all(Array.from({ length: options.poolSize }, () => pool.connect()));
    for (const client of warm) client.release();
    const key = nextKey++;
    const latencies: Promise<number>[] = [];
    let inUse = 0;
    let done = false;
    const start = performance.now();
    const all = Promise.all(
      Array.from({ length: options.callers }, () => run(pool, key, options.holdMs)),
    ).finally(() => {
      done = true;
    });
    while (!done) {
      inUse = Math.max(inUse, pool.totalCount - pool.idleCount);
      const sent = performance.now();
      latencies.push(pool.query('SELECT 1').then(() => performance.now() - sent));
      await sleep(PROBE_EVERY_MS);
    }
    await all;
    const burstMs = performance.now() - start;
    return { burstMs, latencies: await Promise.all(latencies), inUse };
  } finally {
    await pool.end();
  }
}

/**
 * Scenario 5: `callers` concurrent lock calls on one key, each holding it `holdMs`, through one
 * `pg.Pool` of `poolSize`, while an unrelated `SELECT 1` is sent on the same pool every 10 ms. The
 * designs alternate round by round.
 *
 * @example
 * ```ts
 * const rows = await runStarvation({ url, callers: 100, holdMs: 20, poolSize: 10, rounds: 2, log: console.log });
 * ```
 */
export async function runStarvation(options: StarvationOptions): Promise<StarvationRow[]> {
  const list = await designs();
  const results = new Map(list.map(([name]) => [name, [] as Awaited<ReturnType<typeof burst>>[]]));
  for (let round = 0; round < options.rounds; round++) {
    const order = round % 2 === 0 ? list : [...list].reverse();
    for (const [name, run] of order) {
      const result = await burst(run, options);
      results.get(name)!.push(result);
      options.log(
        `  ${name}: burst ${result.burstMs.toFixed(0)} ms, SELECT 1 p99 ${percentile(result.latencies, 99).toFixed(1)} ms`,
      );
    }
  }
  return list.map(([design]) => {
    const runs = results.get(design)!;
    const latencies = runs.flatMap((r) => r.latencies);
    return {
      design,
      burstMs: median(runs.map((r) => r.burstMs)),
      probeP50Ms: percentile(latencies, 50),
      probeP99Ms: percentile(latencies, 99),
      probeMaxMs: Math.max(...latencies),
      probes: latencies.length,
      connectionsInUse: Math.max(...runs.map((r) => r.inUse)),
    };
  });
}
