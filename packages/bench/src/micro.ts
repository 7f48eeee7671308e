import { AsyncLocalStorage } from 'node:async_hooks';
import { withLock } from '@pglock/pg';

/**
 * pglock's own JavaScript per `withLock` call, without a database: a node-postgres-shaped pool
 * whose queries resolve at once runs `withLock` and the same hand-written statement sequence
 * (BEGIN, the lock, the work, COMMIT), so the difference is what pglock itself costs per call.
 */
export interface MicroResult {
  /** CPU µs per call, median over the rounds (`min`: the least, the cost with the least interference). */
  readonly handWrittenUs: number;
  readonly withLockBigintUs: number;
  readonly withLockNameUs: number;
  readonly withLockTimeoutUs: number;
  readonly min: {
    readonly handWrittenUs: number;
    readonly withLockBigintUs: number;
    readonly withLockNameUs: number;
    readonly withLockTimeoutUs: number;
  };
  /**
   * The hand-written sequence while an `AsyncLocalStorage` of someone else's is enabled (an app with
   * OpenTelemetry or a web framework's request context): Node 20 and 22 then charge every promise.
   */
  readonly handWrittenHookedUs: number;
  readonly rounds: number;
  readonly callsPerRound: number;
}

interface InstantResult {
  readonly rows: readonly Record<string, unknown>[];
  readonly command: string;
}

const LOCKED_ROWS = Object.freeze([Object.freeze({ locked: 1 })]);
const SELECTED: InstantResult = Object.freeze({ rows: LOCKED_ROWS, command: 'SELECT' });
const COMMITTED: InstantResult = Object.freeze({ rows: [], command: 'COMMIT' });

/** A checked-out client that answers every statement at once and tracks the transaction status. */
class InstantClient {
  #status = 'I';
  readonly processID = 1;
  readonly secretKey = 1;
  query(text: string, _values?: unknown[]): Promise<InstantResult> {
    if (text === 'BEGIN') this.#status = 'T';
    else if (text === 'COMMIT' || text === 'ROLLBACK') {
      this.#status = 'I';
      return Promise.resolve(COMMITTED);
    }
    return Promise.resolve(SELECTED);
  }
  getTransactionStatus(): string {
    return this.#status;
  }
  on(): this {
    return this;
  }
  removeListener(): this {
    return this;
  }
  release(): void {}
}

/** The slice of `pg.Pool` pglock and the hand-written code call, answering at once. */
class InstantPool {
  readonly totalCount = 1;
  readonly #client = new InstantClient();
  connect(): Promise<InstantClient> {
    return Promise.resolve(this.#client);
  }
  query(text: string, values?: unknown[]): Promise<InstantResult> {
    return this.#client.query(text, values);
  }
}

const LOCK_SQL = 'SELECT pg_advisory_xact_lock($1)';
const WORK_SQL = 'UPDATE bench_counter SET n = n + 1 WHERE id = $1';
const TIMEOUT = { timeoutMs: 5_000 } as const;
type Work = { query(text: string, values: unknown[]): Promise<unknown> };
const work = (client: Work) => client.query(WORK_SQL, [1]);

async function handWritten(pool: InstantPool, key: bigint): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(LOCK_SQL, [String(key)]);
    await client.query(WORK_SQL, [1]);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

// CPU time of this process, not wall time: other work on the machine then shows far less.
async function perCallUs(run: () => Promise<unknown>, calls: number): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) await run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Longer than the moment pglock's store stays enabled after its last callback (10 ms). */
const SETTLE_MS = 25;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

/**
 * Runs the variants in interleaved rounds (the order rotates) and reports medians. pglock enables its
 * `AsyncLocalStorage` only while a callback runs (and 10 ms after: each round starts once that has
 * lapsed), so the hand-written sequence runs with none enabled, as an app's other queries do between
 * locks; `handWrittenHooked` runs it with a store of
 * its own enabled around each of its rounds (what an app with OpenTelemetry pays on every promise).
 *
 * @example
 * ```ts
 * const micro = await runMicro({ rounds: 15, callsPerRound: 20_000 });
 * console.log(micro.withLockNameUs - micro.handWrittenUs);
 * ```
 */
export async function runMicro(options: { rounds: number; callsPerRound: number }): Promise<MicroResult> {
  const { rounds, callsPerRound } = options;
  const pool = new InstantPool();
  const db = pool as unknown as Parameters<typeof withLock>[0];
  let key = 1n << 44n;
  const other = new AsyncLocalStorage<number>();
  const variants: Record<string, () => Promise<unknown>> = {
    handWritten: () => handWritten(pool, key++),
    handWrittenHooked: () => handWritten(pool, key++),
    bigint: () => withLock(db, key++, work),
    name: () => withLock(db, 'account:1', work),
    timeout: () => withLock(db, 'account:1', work, TIMEOUT),
  };
  const measure = async (name: string): Promise<number> => {
    if (name !== 'handWrittenHooked') return perCallUs(variants[name]!, callsPerRound);
    return other.run(1, async () => {
      try {
        return await perCallUs(variants[name]!, callsPerRound);
      } finally {
        other.disable();
      }
    });
  };
  const names = Object.keys(variants);
  const samples = new Map(names.map((name) => [name, [] as number[]]));
  for (const name of names) await measure(name); // warm-up
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round) % names.length]!;
      // pglock keeps its store enabled for a moment after its last callback (core's nesting.ts):
      // let it lapse, so that every round starts as an app's other code runs, with no store enabled.
      await settle();
      samples.get(name)!.push(await measure(name));
    }
  }
  return {
    handWrittenUs: median(samples.get('handWritten')!),
    withLockBigintUs: median(samples.get('bigint')!),
    withLockNameUs: median(samples.get('name')!),
    withLockTimeoutUs: median(samples.get('timeout')!),
    min: {
      handWrittenUs: Math.min(...samples.get('handWritten')!),
      withLockBigintUs: Math.min(...samples.get('bigint')!),
      withLockNameUs: Math.min(...samples.get('name')!),
      withLockTimeoutUs: Math.min(...samples.get('timeout')!),
    },
    handWrittenHookedUs: median(samples.get('handWrittenHooked')!),
    rounds,
    callsPerRound,
  };
}

if (process.argv[1]?.endsWith('micro.ts')) {
  const r = await runMicro({
    rounds: Number(process.argv[2] ?? 15),
    callsPerRound: Number(process.argv[3] ?? 20_000),
  });
  const d = (v: number) => `${v.toFixed(2)} µs (+${(v - r.handWrittenUs).toFixed(2)})`;
  console.log(
    `hand-written ${r.handWrittenUs.toFixed(2)} µs (with another AsyncLocalStorage enabled ${r.handWrittenHookedUs.toFixed(2)})`,
  );
  console.log(
    `withLock bigint ${d(r.withLockBigintUs)}, name ${d(r.withLockNameUs)}, name+timeoutMs ${d(r.withLockTimeoutUs)}`,
  );
  const m = r.min;
  console.log(
    `min: hand ${m.handWrittenUs.toFixed(2)}, bigint +${(m.withLockBigintUs - m.handWrittenUs).toFixed(2)}, name +${(m.withLockNameUs - m.handWrittenUs).toFixed(2)}, timeout +${(m.withLockTimeoutUs - m.handWrittenUs).toFixed(2)}`,
  );
}
