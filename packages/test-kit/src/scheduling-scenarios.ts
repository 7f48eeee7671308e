// The worker scenarios of the scheduling suite (runOnce from several processes), kept out of
// worker.ts so that it only dispatches to them.
import type { AdapterInstance } from './harness.ts';
import { passGate } from './start-gate.ts';

type Say = (event: Record<string, unknown>) => void;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Scenario name → what the worker runs. */
export const schedulingScenarios: Record<
  string,
  (instance: AdapterInstance, args: Record<string, unknown>, say: Say) => Promise<void>
> = {
  /**
   * Once the `gate` lock is free (every process starts together), calls `runOnce(key, { per })`
   * every 100–200 ms for `ms`; each run records its period and the server's clock in
   * `<table>_rows`. Reports how each call ended and the periods it saw.
   */
  async runOnceLoop(instance, args, say) {
    const { key, gate, table, per, ms } = args as {
      key: string;
      gate: string;
      table: string;
      per: number;
      ms: number;
    };
    const counts = { ran: 0, done: 0, busy: 0, 'too-soon': 0, failed: 0 };
    const periods = new Set<number>();
    say({ event: 'ready' });
    await passGate(instance, gate);
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const result = await instance.locks.runOnce(key, { per }, async (tx, { period }) => {
        await instance.sqlOn(tx)(
          `INSERT INTO ${table}_rows (worker, period_start, at) VALUES ($1::int, $2::timestamptz, clock_timestamp())`,
          [process.pid, period.start.toISOString()],
        );
      });
      counts[result.ran ? 'ran' : result.reason]++;
      periods.add(result.period.start.getTime());
      await sleep(100 + Math.random() * 100);
    }
    say({ event: 'done', counts, periods: [...periods] });
  },

  /** Runs `runOnce(key, { per: '1h' })` whose job writes a row, says so, and hangs until killed. */
  async runOnceHang(instance, args, say) {
    const { key, table } = args as { key: string; table: string };
    await instance.locks.runOnce(key, { per: '1h' }, async (tx) => {
      await instance.sqlOn(tx)(
        `INSERT INTO ${table}_rows (worker, period_start, at) VALUES ($1::int, now(), now())`,
        [process.pid],
      );
      say({ event: 'running' });
      await new Promise(() => undefined);
    });
  },
};
