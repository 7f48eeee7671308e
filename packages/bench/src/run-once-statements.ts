import pg from 'pg';
import { countStatements } from './count-statements.ts';

/** Statements a `runOnce` sends (pg adapter), counted on its pool's connections. */
export interface RunOnceStatements {
  /** A call that runs its job (a new period): lock, claim, run, record, commit. */
  readonly ran: number | undefined;
  /** A call that finds the period already run. */
  readonly alreadyRan: number | undefined;
  /** A call whose job throws (its failure recorded). */
  readonly failed: number | undefined;
  readonly calls: number;
  /** Why the statements were not counted. */
  readonly skipped?: string;
}

// A schema of the bench's own: pglock_jobs of the shared database (other suites create and drop
// it) is left alone; search_path points runOnce at this one.
const SCHEMA = 'pglock_bench';

/**
 * Counts the statements per `runOnce` call on node-postgres, with a job doing one `SELECT 1`
 * (counted too, and subtracted): what pglock itself sends around a job.
 *
 * @example
 * ```ts
 * const { ran, alreadyRan } = await countRunOnce(url);
 * ```
 */
export async function countRunOnce(url: string, calls = 20): Promise<RunOnceStatements> {
  const { runOnce, JOBS_TABLE_DDL } = await import('@pglock/pg');
  const parsed = new URL(url);
  const options = parsed.searchParams.get('options') ?? '';
  parsed.searchParams.set('options', `${options} -c search_path=${SCHEMA}`.trim());
  const scoped = parsed.toString().replaceAll('+', '%20');
  const pool = new pg.Pool({ connectionString: scoped, max: 1 });
  pool.on('error', () => undefined);
  const sent = countStatements(pool);
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
    await pool.query(JOBS_TABLE_DDL);
    const tag = `bench-${process.pid}-${Date.now()}`;
    const job = async (client: pg.PoolClient) => {
      await client.query('SELECT 1');
    };
    const per = async (name: (i: number) => string, fn: (client: pg.PoolClient) => Promise<void>) => {
      await runOnce(pool, `${tag}-warm-${name(0)}`, { per: '1h' }, fn).catch(() => undefined);
      const before = sent();
      for (let i = 0; i < calls; i++) await runOnce(pool, name(i), { per: '1h' }, fn).catch(() => undefined);
      return (sent() - before) / calls - 1;
    };
    const ran = await per((i) => `${tag}-ran-${i}`, job);
    const alreadyRan = (await per((i) => `${tag}-ran-${i}`, job)) + 1;
    const failed = await per(
      (i) => `${tag}-failed-${i}`,
      async (client) => {
        await job(client);
        throw new Error('the job failed');
      },
    );
    await pool.query(`DELETE FROM ${SCHEMA}.pglock_jobs WHERE name LIKE $1`, [`${tag}%`]);
    return { ran, alreadyRan, failed, calls };
  } catch (error) {
    return { ran: undefined, alreadyRan: undefined, failed: undefined, calls, skipped: String(error) };
  } finally {
    await pool.end();
  }
}
