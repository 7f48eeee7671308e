// A chaos worker process: opens one adapter instance from a conformance harness and takes a random
// mix of locks on the chaos keys until the deadline, recording each critical section inside the
// lock's transaction. Usage: chaos-worker <harness module URL> <export> <worker id> <deadline ms | stdin>;
// with `stdin`, the worker reports `ready` and reads the deadline from its first input line.
import { createInterface } from 'node:readline';
import { LockNotAcquiredError } from '@pglock/core';
import type { AdapterHarness, Sql } from '@pglock/test-kit';
import { chaosKeys, type WorkerStats } from './chaos-schema.ts';

const [moduleUrl, exportName, worker, deadlineText] = process.argv.slice(2);
const url = process.env.DATABASE_URL;
if (!moduleUrl || !exportName || !worker || !deadlineText || !url) {
  throw new Error('usage: chaos-worker <moduleUrl> <export> <worker> <deadline>');
}
const harness = (await import(moduleUrl))[exportName] as AdapterHarness;
const instance = await harness.open(url);
const stats: WorkerStats = { completed: 0, busy: 0, timedOut: 0, errors: 0 };
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};
const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The body of a section: read each key's counter, dawdle, write +1 when exclusive, record the section. */
async function section(sql: Sql, keys: readonly string[], mode: 'exclusive' | 'shared'): Promise<void> {
  const [entry] = await sql('SELECT clock_timestamp()::text AS at');
  const seen = new Map<string, number>();
  for (const key of keys) {
    const [row] = await sql('SELECT value FROM chaos_counters WHERE key = $1::text', [key]);
    seen.set(key, Number(row?.value));
  }
  // Half the time the backend sits idle in its transaction, half the time it runs a statement, so
  // kills and terminations land in both states.
  if (Math.random() < 0.5) await sleep(Math.floor(Math.random() * 15));
  else await sql(`SELECT 1 AS one FROM pg_sleep(${(Math.random() * 0.015).toFixed(3)})`);
  for (const key of keys) {
    const value = seen.get(key) as number;
    if (mode === 'exclusive') {
      // Placeholders in order of appearance: the Kysely harness binds values that way.
      await sql('UPDATE chaos_counters SET value = $1::text::int WHERE key = $2::text', [
        String(value + 1),
        key,
      ]);
    }
    await sql(
      `INSERT INTO chaos_sections (worker, key, mode, entered, exited, seen)
       VALUES ($1::text, $2::text, $3::text, $4::text::timestamptz, clock_timestamp(), $5::text::int)`,
      [worker, key, mode, String(entry?.at), String(value)],
    );
  }
  stats.completed++;
}

async function step(): Promise<void> {
  const kind = pick(['exclusive', 'shared', 'try', 'timeout', 'multi'] as const);
  const watchdog = setTimeout(() => process.stderr.write(`step ${kind} stuck for 10 s\n`), 10_000);
  try {
    await run(kind);
  } finally {
    clearTimeout(watchdog);
  }
}

async function run(kind: 'exclusive' | 'shared' | 'try' | 'timeout' | 'multi'): Promise<void> {
  const key = pick(chaosKeys);
  if (kind === 'exclusive') await instance.withLock(key, (sql) => section(sql, [key], 'exclusive'));
  else if (kind === 'shared') {
    await instance.withLock(key, (sql) => section(sql, [key], 'shared'), { shared: true });
  } else if (kind === 'try') {
    const result = await instance.tryWithLock(key, (sql) => section(sql, [key], 'exclusive'));
    if (!result.acquired) stats.busy++;
  } else if (kind === 'timeout') {
    const timeoutMs = 5 + Math.floor(Math.random() * 100);
    await instance.withLock(key, (sql) => section(sql, [key], 'exclusive'), { timeoutMs });
  } else {
    const other = pick(chaosKeys.filter((k) => k !== key));
    await instance.withLock([key, other], (sql) => section(sql, [key, other], 'exclusive'));
  }
}

process.on('uncaughtException', (error) => {
  process.stderr.write(`UNCAUGHT ${String(error)}\n${new Error('at').stack}\n`);
  process.exit(70);
});
say({ event: 'ready', pid: process.pid });
const deadline =
  deadlineText === 'stdin'
    ? Number((await createInterface({ input: process.stdin })[Symbol.asyncIterator]().next()).value)
    : Number(deadlineText);
const report = setInterval(() => say({ event: 'stats', ...stats }), 250);
while (Date.now() < deadline) {
  try {
    await step();
  } catch (error) {
    if (LockNotAcquiredError.is(error)) stats.timedOut++;
    else {
      stats.errors++;
      if (process.env.CHAOS_VERBOSE) process.stderr.write(`error: ${String(error)}\n`);
    }
    // A connection that just died is replaced by the pool on the next call; do not spin on it.
    if (!LockNotAcquiredError.is(error)) await sleep(20);
  }
}
clearInterval(report);
say({ event: 'done', ...stats });
const closing = setTimeout(() => process.stderr.write('close() stuck for 5 s\n'), 5_000);
await instance.close().catch(() => undefined);
clearTimeout(closing);
