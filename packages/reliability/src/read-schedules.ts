import type pg from 'pg';
import { checkSchedules, type ScheduleReport } from './schedule-history.ts';

export type { ScheduleReport } from './schedule-history.ts';

// Timestamps as epoch microseconds (text, then BigInt), so that ordering is exact.
const us = (column: string) => `(extract(epoch FROM ${column}) * 1000000)::bigint::text`;

/**
 * Reads a chaos run's `runOnce` and `leader` tables (chaos-schema.ts) and checks them with
 * {@link checkSchedules}.
 *
 * @example
 * ```ts
 * const report = await readSchedules(db, () => 300);
 * console.log(report.jobRuns, report.elections, report.violations.length);
 * ```
 */
export async function readSchedules(db: pg.Client, perOf: (name: string) => number): Promise<ScheduleReport> {
  const jobRuns = (
    await db.query(
      `SELECT id::int AS id, worker, name, doomed, ${us('period_start')} AS period_start, ${us('period_end')} AS period_end,
              ${us('tx_start')} AS tx_start, ${us('ran_at')} AS ran_at FROM chaos_job_runs`,
    )
  ).rows.map((row) => ({
    id: row.id,
    worker: row.worker,
    name: row.name,
    doomed: row.doomed,
    periodStart: BigInt(row.period_start),
    periodEnd: BigInt(row.period_end),
    txStart: BigInt(row.tx_start),
    ranAt: BigInt(row.ran_at),
  }));
  const elections = (
    await db.query(
      `SELECT id::int AS id, name, term::int AS term, ${us('elected_at')} AS elected_at, pid, held FROM chaos_elections`,
    )
  ).rows.map((row) => ({ ...row, electedAt: BigInt(row.elected_at) }));
  const ticks = (
    await db.query(`SELECT name, term::int AS term, ${us('at')} AS at FROM chaos_leader_ticks`)
  ).rows.map((row) => ({ name: row.name, term: row.term, at: BigInt(row.at) }));
  const fencedWrites = (
    await db.query('SELECT id::int AS id, name, term::int AS term, campaign FROM chaos_fenced_writes')
  ).rows;
  return checkSchedules({ jobRuns, perOf, elections, ticks, fencedWrites });
}
