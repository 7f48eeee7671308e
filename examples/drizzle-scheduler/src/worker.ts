// One worker process: migrates (once across all workers), then runs a cron-like loop of ticks.
import { fileURLToPath } from 'node:url';
import { advisoryLocks, LockDeadlockError, migrateWithLock } from '@pglock/drizzle';
import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { accounts, jobRuns, jobs, schema } from './schema.ts';

const { DATABASE_URL, SCHEDULER_SCHEMA, WORKER, START_AT, TICKS, TICK_MS } = process.env;
if (!DATABASE_URL || !SCHEDULER_SCHEMA || !WORKER || !START_AT || !TICKS || !TICK_MS)
  throw new Error('worker.ts is started by main.ts');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Every table of this run lives in its own schema, found through search_path.
const pool = new pg.Pool({
  connectionString: DATABASE_URL,
  options: `-c search_path=${SCHEDULER_SCHEMA}`,
  max: 4,
});
const db = drizzle({ client: pool, schema });
const locks = advisoryLocks(db, { namespace: `scheduler:${SCHEDULER_SCHEMA}` });

await migrateWithLock(db, {
  migrationsFolder: fileURLToPath(new URL('../drizzle', import.meta.url)),
  migrationsSchema: SCHEDULER_SCHEMA,
});

const stats = { runs: 0, skipped: 0, transfers: 0, deadlocks: 0 };

/** A job runs where its try-lock is won; a worker that finds it taken skips it this tick. */
async function runJob(name: string, tick: number): Promise<void> {
  const result = await locks.tryWithLock(`job:${name}`, async (tx) => {
    const [job] = await tx.select().from(jobs).where(eq(jobs.name, name));
    if (!job || job.lastTick >= tick) return false; // a faster worker already ran this tick
    await sleep(40); // the job's work
    await tx.update(jobs).set({ lastTick: tick }).where(eq(jobs.name, name));
    await tx.insert(jobRuns).values({ job: name, tick, worker: WORKER! });
    return true;
  });
  if (result.acquired && result.value) stats.runs++;
  else stats.skipped++;
}

/** Read-modify-write on two accounts, both locked at once: a→b and b→a never deadlock. */
async function transfer(from: number, to: number, amount: number): Promise<void> {
  try {
    await locks.withLock([`account:${from}`, `account:${to}`], async (tx) => {
      const [a] = await tx.select().from(accounts).where(eq(accounts.id, from));
      const [b] = await tx.select().from(accounts).where(eq(accounts.id, to));
      await sleep(2); // widen the window a lost update would need
      await tx
        .update(accounts)
        .set({ balance: (a?.balance ?? 0) - amount })
        .where(eq(accounts.id, from));
      await tx
        .update(accounts)
        .set({ balance: (b?.balance ?? 0) + amount })
        .where(eq(accounts.id, to));
    });
    stats.transfers++;
  } catch (error) {
    if (!LockDeadlockError.is(error)) throw error;
    stats.deadlocks++;
  }
}

const names = (await db.select({ name: jobs.name }).from(jobs)).map((j) => j.name);
for (let tick = 0; tick < Number(TICKS); tick++) {
  await sleep(Math.max(0, Number(START_AT) + tick * Number(TICK_MS) - Date.now()));
  await Promise.all(names.map((name) => runJob(name, tick)));
  for (let i = 0; i < 5; i++) {
    const from = 1 + Math.floor(Math.random() * 4);
    const to = 1 + ((from + Math.floor(Math.random() * 3)) % 4);
    await transfer(from, to, 1 + Math.floor(Math.random() * 20));
  }
}
await db.execute(sql`SELECT 1`);
process.stdout.write(`${JSON.stringify({ worker: WORKER, ...stats })}\n`);
await pool.end();
