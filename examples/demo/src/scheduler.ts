// The leader's work: while this instance leads, its scheduler "ticks" (standing for enqueueing the
// due jobs of a real scheduler), each tick a write guarded by the fencing term. Plain SQL on the
// instance's pg.Pool, the same for every adapter: what the demo shows here is `leader`, not an ORM.
import type { Election } from '@pglock/core';
import type pg from 'pg';
import { sleep } from './adapters/demo-adapter.ts';

/** Who leads: the lock's name and namespace (to find its term in pglock_jobs) and the instance. */
export interface SchedulerConfig {
  readonly pool: pg.Pool;
  readonly instance: string;
  readonly name: string;
  readonly namespace: string;
  readonly tickMs: number;
}

// The term's row. elected_at is the time pglock wrote the term, on the lock's own connection; read
// back while this term is still the name's latest (it is, unless the term already ended).
const RECORD_TERM = `INSERT INTO leader_terms (term, instance, elected_at)
  SELECT $1::bigint, $2::text,
    (SELECT elected_at FROM pglock_jobs WHERE name = $3::text AND namespace = $4::text AND term = $1::bigint)`;

// The fencing guard of docs/scheduling.md: applied only while no later term has written. The tick is
// recorded on the term's row in the same statement, with the server's clock.
const TICK = `WITH fenced AS (
    UPDATE scheduler_state SET term = $1::bigint, instance = $2::text, ticks = ticks + 1, ticked_at = clock_timestamp()
     WHERE id = 1 AND term <= $1::bigint RETURNING ticked_at)
  UPDATE leader_terms t SET last_tick_at = fenced.ticked_at, ticks = t.ticks + 1
    FROM fenced WHERE t.term = $1::bigint AND t.instance = $2::text
  RETURNING t.ticks`;

/**
 * The body of `onElected`: records the term, then ticks every `tickMs` until the term's signal aborts
 * (or a tick is refused: a later term wrote, so this one is over). It returns only after its last
 * write, so pglock releases the lock (and a standby is elected) after the work stopped.
 *
 * @example
 * ```ts
 * const campaign = locks.leader('scheduler', {
 *   onElected: (election) => runScheduler({ pool, instance: '#1 pg', name: 'scheduler', namespace, tickMs: 100 }, election),
 * });
 * ```
 */
export async function runScheduler(config: SchedulerConfig, { term, signal }: Election): Promise<void> {
  const { pool, instance } = config;
  await pool.query(RECORD_TERM, [term, instance, config.name, config.namespace]);
  while (!signal.aborted) {
    const { rowCount } = await pool.query(TICK, [term, instance]);
    if (rowCount === 0) return;
    await Promise.race([sleep(config.tickMs), aborted(signal)]);
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
