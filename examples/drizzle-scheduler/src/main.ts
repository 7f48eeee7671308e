// Starts several worker processes against one database and prints what they did. With DATABASE_URL
// unset, it runs against an embedded PostgreSQL started (and removed) for this run.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { devDatabase } from './dev-database.ts';

export interface SchedulerSummary {
  readonly workers: readonly {
    worker: string;
    runs: number;
    skipped: number;
    transfers: number;
    deadlocks: number;
  }[];
  /** Job runs per (job, tick): every value must be 1. */
  readonly runsPerJobTick: readonly number[];
  readonly expectedJobTicks: number;
  readonly migrationsApplied: number;
  readonly totalBalance: { readonly before: number; readonly after: number };
  readonly ok: boolean;
}

const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** Runs `workers` processes for `ticks` ticks in a fresh schema of `url`, and checks the outcome. */
export async function runScheduler(
  url: string,
  workers = 4,
  ticks = 8,
  tickMs = 250,
): Promise<SchedulerSummary> {
  const schema = `drizzle_scheduler_${randomUUID().replaceAll('-', '').slice(0, 10)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  try {
    const startAt = Date.now() + 4_000; // time for every worker to start and migrate
    const outputs = await Promise.all(
      Array.from({ length: workers }, (_, i) => runWorker(url, schema, `w${i + 1}`, startAt, ticks, tickMs)),
    );
    const runs = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${schema}.job_runs GROUP BY job, tick ORDER BY job, tick`,
    );
    const [jobsRow] = (await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.jobs`))
      .rows;
    const [balance] = (
      await admin.query<{ total: number }>(`SELECT sum(balance)::int AS total FROM ${schema}.accounts`)
    ).rows;
    const [migrations] = (
      await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.__drizzle_migrations`)
    ).rows;
    const runsPerJobTick = runs.rows.map((r) => r.n);
    const expectedJobTicks = (jobsRow?.n ?? 0) * ticks;
    const totalBalance = { before: 4 * 1000, after: balance?.total ?? 0 };
    const ok =
      runsPerJobTick.length === expectedJobTicks &&
      runsPerJobTick.every((n) => n === 1) &&
      totalBalance.after === totalBalance.before &&
      migrations?.n === 1 &&
      outputs.every((w) => w.deadlocks === 0);
    return {
      workers: outputs,
      runsPerJobTick,
      expectedJobTicks,
      migrationsApplied: migrations?.n ?? 0,
      totalBalance,
      ok,
    };
  } finally {
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

function runWorker(
  url: string,
  schema: string,
  worker: string,
  startAt: number,
  ticks: number,
  tickMs: number,
) {
  return new Promise<SchedulerSummary['workers'][number]>((resolve, reject) => {
    // tsx runs the TypeScript; NODE_OPTIONS (and with it any --conditions) passes on to the worker.
    const child = spawn(process.execPath, ['--import', 'tsx', workerPath], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        SCHEDULER_SCHEMA: schema,
        WORKER: worker,
        START_AT: String(startAt),
        TICKS: String(ticks),
        TICK_MS: String(tickMs),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`worker ${worker} exited with ${code}`));
      else resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '{}'));
    });
  });
}

function print(summary: SchedulerSummary): void {
  console.log('worker  job runs  skipped (taken or already run)  transfers  deadlocks');
  for (const w of summary.workers)
    console.log(
      `${w.worker.padEnd(8)}${String(w.runs).padStart(8)}${String(w.skipped).padStart(32)}${String(w.transfers).padStart(11)}${String(w.deadlocks).padStart(11)}`,
    );
  const once = summary.runsPerJobTick.filter((n) => n === 1).length;
  console.log(
    `\njob ticks run exactly once: ${once} of ${summary.expectedJobTicks} (runs per tick: max ${Math.max(0, ...summary.runsPerJobTick)})`,
  );
  console.log(`migrations applied: ${summary.migrationsApplied} (4 workers called migrateWithLock at once)`);
  console.log(
    `total balance: ${summary.totalBalance.before} before, ${summary.totalBalance.after} after (no lost update)`,
  );
  console.log(
    summary.ok ? '\nOK: every job ran once per tick, no transfer was lost, nothing deadlocked.' : '\nFAILED',
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const database = await devDatabase();
  try {
    console.log(
      `PostgreSQL: ${database.source === 'embedded' ? 'embedded (started for this run)' : 'DATABASE_URL'}; 4 workers, 8 ticks of 250 ms\n`,
    );
    const summary = await runScheduler(database.url);
    print(summary);
    process.exitCode = summary.ok ? 0 : 1;
  } finally {
    await database.stop();
  }
}
