// The worker scenarios of the run-limits suite (runOnce's maxRunMs and retry from another process),
// kept out of worker.ts so that it only dispatches to them.
import type { AdapterInstance } from './harness.ts';

type Say = (event: Record<string, unknown>) => void;

/** Scenario name → what the worker runs. */
export const runLimitsScenarios: Record<
  string,
  (instance: AdapterInstance, args: Record<string, unknown>, say: Say) => Promise<void>
> = {
  /**
   * One `runOnce(key, options)` whose job writes `(worker, attempt)` to `<table>_rows`, then throws
   * when `throws` is set, else returns `'ran'`. Reports the result (or the error's name, code and
   * message) and the attempts the job saw.
   */
  async runOnceCall(instance, args, say) {
    const { key, table, options, throws } = args as {
      key: string;
      table: string;
      options: Record<string, unknown>;
      throws: boolean;
    };
    const attempts: number[] = [];
    try {
      const result = await instance.locks.runOnce(key, options as never, async (tx, { attempt }) => {
        attempts.push(attempt);
        await instance.sqlOn(tx)(`INSERT INTO ${table}_rows (worker, attempt) VALUES ($1::int, $2::int)`, [
          process.pid,
          attempt,
        ]);
        if (throws) throw new Error(`attempt ${attempt} failed in worker ${process.pid}`);
        return 'ran';
      });
      const { period: _period, ...rest } = result;
      say({ event: 'done', result: rest, attempts });
    } catch (error) {
      const { name, code, message } = error as { name?: string; code?: string; message?: string };
      say({ event: 'done', error: { name, code, message }, attempts });
    }
  },
};
