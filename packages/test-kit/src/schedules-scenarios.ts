// The worker scenarios of the schedules suite (runOnce schedules from several processes), kept out
// of worker.ts so that it only dispatches to them.
import type { RunOnceOptions } from '@pglock/core';
import type { AdapterInstance } from './harness.ts';
import { passGate } from './start-gate.ts';

type Say = (event: Record<string, unknown>) => void;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The rows table a schedule scenario's runs write (`<table>_rows`), created by the test. */
export const scheduleRowsDdl = (table: string) =>
  `CREATE TABLE ${table}_rows (id serial PRIMARY KEY, worker int NOT NULL, period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL, missed int NOT NULL, at_now timestamptz NOT NULL,
    started timestamptz NOT NULL, ended timestamptz)`;

/**
 * One `runOnce` call of a scheduleLoop worker: the period it answered for (epoch ms of its start),
 * `'ran'` or the reason it did not, when the call started and resolved (`Date.now()`, one clock for
 * every process of the machine) and the worker's pid.
 */
export interface ScheduleCall {
  readonly period: number;
  readonly outcome: string;
  readonly at: number;
  readonly until: number;
  readonly worker: number;
}

/** Scenario name → what the worker runs. */
export const schedulesScenarios: Record<
  string,
  (instance: AdapterInstance, args: Record<string, unknown>, say: Say) => Promise<void>
> = {
  /**
   * Once the `gate` lock is free (every process starts together), calls `runOnce(key, options)`
   * every `tickMs[0]`–`tickMs[1]` ms for `ms`; each run records its period, `missed`, the
   * transaction's `now()` and when it started and ended (server clock) in `<table>_rows`. With
   * `overrunMs`, the fleet's first run lasts until `overrunMs` after its period's end. Reports each
   * call ({@link ScheduleCall}): the period it answered for, its outcome, when it started and ended.
   */
  async scheduleLoop(instance, args, say) {
    const { key, gate, table, options, ms, tickMs, overrunMs } = args as {
      key: string;
      gate: string;
      table: string;
      options: RunOnceOptions;
      ms: number;
      tickMs: [number, number];
      overrunMs?: number;
    };
    const calls: ScheduleCall[] = [];
    say({ event: 'ready' });
    await passGate(instance, gate);
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const at = Date.now();
      const result = await instance.locks.runOnce(key, options, async (tx, { period, missed }) => {
        const sql = instance.sqlOn(tx);
        const [row] = await sql(
          `INSERT INTO ${table}_rows (worker, period_start, period_end, missed, at_now, started)
           VALUES ($1::int, $2::timestamptz, $3::timestamptz, $4::int, now(), clock_timestamp())
           RETURNING id, (SELECT count(*) FROM ${table}_rows)::int AS before,
             floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint::text AS clock`,
          [process.pid, period.start.toISOString(), period.end.toISOString(), missed],
        );
        if (overrunMs !== undefined && Number(row?.before) === 0) {
          await sleep(period.end.getTime() + overrunMs - Number(row?.clock));
        }
        await sql(`UPDATE ${table}_rows SET ended = clock_timestamp() WHERE id = $1::int`, [row?.id]);
      });
      calls.push({
        period: result.period.start.getTime(),
        outcome: result.ran ? 'ran' : result.reason,
        at,
        until: Date.now(),
        worker: process.pid,
      });
      await sleep(tickMs[0] + Math.random() * (tickMs[1] - tickMs[0]));
    }
    say({ event: 'done', calls });
  },
};
