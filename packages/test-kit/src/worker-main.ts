// The body of a worker process of the conformance suite: opens its own adapter instance from the
// harness and runs one scenario, reporting progress as JSON lines on stdout. Two entries start it:
// worker.ts (loaded through tsx, the harness imported by URL) and the bundle child.ts builds
// (worker-bundle.ts, the harness bundled in: no loader, a fifth of the start-up CPU).
import type { AdapterHarness } from './harness.ts';
import { leaderLeaseScenarios } from './leader-lease-scenarios.ts';
import { leaderScenarios } from './leader-scenarios.ts';
import { runLimitsScenarios } from './run-limits-scenarios.ts';
import { schedulesScenarios } from './schedules-scenarios.ts';
import { schedulingScenarios } from './scheduling-scenarios.ts';

/**
 * Runs `scenario` with `args` on an instance `harness` opens on `url`, then closes it.
 *
 * @example
 * ```ts
 * import { runWorker } from './worker-main.ts';
 * import type { AdapterHarness } from './harness.ts';
 *
 * declare const harness: AdapterHarness;
 * await runWorker(harness, 'postgres://postgres@127.0.0.1:5432/test', 'hold', { key: 'job' });
 * ```
 */
export async function runWorker(
  harness: AdapterHarness,
  url: string,
  scenario: string,
  args: Record<string, unknown>,
): Promise<void> {
  const instance = await harness.open(url);
  const say = (event: Record<string, unknown>): void => {
    process.stdout.write(`${JSON.stringify(event)}\n`);
  };
  // The parent budgets everything after this from how long getting here took (child.ts).
  say({ event: 'loaded' });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  if (scenario === 'increment') {
    // Read-sleep-write: loses updates unless the lock excludes every other process.
    const { key, table, sections, sleepMs } = args as {
      key: string;
      table: string;
      sections: number;
      sleepMs: number;
    };
    say({ event: 'ready' });
    for (let i = 0; i < sections; i++) {
      await instance.withLock(key, async (sql) => {
        const [entry] = await sql(
          `SELECT clock_timestamp()::text AS at, pg_backend_pid() AS pid, n FROM ${table}_counter WHERE id = 1`,
        );
        await sleep(sleepMs);
        await sql(`UPDATE ${table}_counter SET n = $1::int WHERE id = 1`, [Number(entry?.n) + 1]);
        await sql(
          `INSERT INTO ${table}_intervals (pid, worker, entered, exited) VALUES ($1::int, $2::int, $3::timestamptz, clock_timestamp())`,
          [entry?.pid, process.pid, entry?.at],
        );
      });
    }
    say({ event: 'done' });
  } else if (scenario === 'hold') {
    // Takes the lock and holds it until killed.
    const { key } = args as { key: string };
    await instance.withLock(key, async (sql) => {
      const [row] = await sql('SELECT pg_backend_pid() AS pid');
      say({ event: 'held', pid: Number(row?.pid) });
      await new Promise(() => undefined);
    });
  } else if (scenario === 'wait') {
    // Waits for the lock, reports the moment it got it, and exits.
    const { key } = args as { key: string };
    say({ event: 'waiting' });
    await instance.withLock(key, async (sql) => {
      const [row] = await sql('SELECT pg_backend_pid() AS pid');
      say({ event: 'held', pid: Number(row?.pid), at: Date.now() });
    });
  } else if (Object.hasOwn(schedulingScenarios, scenario)) {
    await schedulingScenarios[scenario]?.(instance, args, say);
  } else if (Object.hasOwn(schedulesScenarios, scenario)) {
    await schedulesScenarios[scenario]?.(instance, args, say);
  } else if (Object.hasOwn(leaderScenarios, scenario)) {
    await leaderScenarios[scenario]?.(instance, args, say);
  } else if (Object.hasOwn(leaderLeaseScenarios, scenario)) {
    await leaderLeaseScenarios[scenario]?.(instance, args, say);
  } else if (Object.hasOwn(runLimitsScenarios, scenario)) {
    await runLimitsScenarios[scenario]?.(instance, args, say);
  } else {
    throw new Error(`unknown scenario ${scenario}`);
  }
  await instance.close();
}
