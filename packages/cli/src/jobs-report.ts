import type { RegistryDb } from './registry.ts';

/** A `runOnce` job's schedule, as its row records it (the columns the table has). */
export interface JobSchedule {
  /** `per` in milliseconds (`per_ms`), or `null` when the row records none. */
  readonly perMs: number | null;
  /** The cron expression (`cron`), when the table has the column. */
  readonly cron?: string | null;
  /** The cron schedule's time zone (`time_zone`), when the table has the column. */
  readonly timeZone?: string | null;
}

/** The last run a job's row records; a field is absent when the table has no such column. */
export interface JobRun {
  /** Start of the last period whose run committed (`period_start`). */
  readonly periodStart: string | null;
  /** End of that period (`period_end`). */
  readonly periodEnd?: string | null;
  /** When that run took the lock (`ran_at`). */
  readonly at: string | null;
  /** How long it ran (`run_ms`). */
  readonly durationMs?: number | null;
  /** How it ended (`outcome`). */
  readonly outcome?: string | null;
  /** Attempts in its period (`attempts`, `attempt_period`). */
  readonly attempts?: number | null;
  readonly attemptPeriod?: string | null;
  /** The last failure's message (`last_error`). */
  readonly lastError?: string | null;
}

/** One `runOnce` job of `pglock_jobs`. */
export interface JobEntry {
  /** The row's key (the lock key) as decimal text. */
  readonly key: string;
  readonly name: string;
  readonly namespace: string | null;
  readonly schedule: JobSchedule;
  readonly lastRun: JobRun;
  /**
   * When a tick runs it next (ISO 8601): the end of the last run's period (`period_end`, or
   * `period_start + per_ms`), or the start of the current period when that one has not run;
   * `null` when the row cannot say (a cron job on a table without `period_end`).
   */
  readonly nextDue: string | null;
  /** True when `nextDue` has come: the next tick runs it. */
  readonly due: boolean;
  /** True when a session holds the job's lock now (a run in progress). */
  readonly running: boolean;
}

/** The backend that holds a leader's lock now. */
export interface LeaderHolder {
  readonly pid: number;
  readonly application: string | null;
}

/** One `leader` name of `pglock_jobs`: its last term, and who holds its lock now. */
export interface LeaderEntry {
  readonly key: string;
  readonly name: string;
  readonly namespace: string | null;
  /** The last term elected. */
  readonly term: number;
  /** When it began (`elected_at`). */
  readonly since: string | null;
  /** Who leads it (`identity`); `null` without one, absent on a table without the column. */
  readonly identity?: string | null;
  /** The lock's holder now; `null` when nobody leads (the last term ended). */
  readonly holder: LeaderHolder | null;
}

/** What `pglock jobs --json` prints. */
export interface JobsReport {
  /** The server's clock when read. */
  readonly takenAt: string;
  readonly jobs: readonly JobEntry[];
  readonly leaders: readonly LeaderEntry[];
  readonly warnings: readonly string[];
}

// Each row as jsonb, so that the report reads whatever columns the table has (an older table, or a
// newer one with columns this version does not know). The key travels as text: jsonb numbers lose
// bigint precision in JavaScript. The lock's holder comes from pg_locks in the same statement.
const jobsQuery = `SELECT j.key::text AS key, to_jsonb(j) AS row, l.pid, a.application_name AS app,
    floor(extract(epoch FROM now()) * 1000)::bigint::text AS now_ms
  FROM pglock_jobs AS j
  LEFT JOIN LATERAL (
    SELECT pid FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND classid = ((j.key >> 32) & 4294967295)::oid AND objid = (j.key & 4294967295)::oid
    ORDER BY pid LIMIT 1) AS l ON true
  LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
  WHERE $1::text IS NULL OR j.namespace = $1::text
  ORDER BY j.namespace NULLS FIRST, j.name, j.key`;

/**
 * Reads `pglock_jobs` with each name's lock holder, in one statement, and builds the report. A
 * database without the table gives an empty report with a warning that says how to create it.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { readJobsReport } from '@pglock/cli';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const report = await readJobsReport(pool);
 * for (const leader of report.leaders) console.log(leader.name, leader.identity, leader.holder?.pid ?? 'none');
 * ```
 */
export async function readJobsReport(
  db: RegistryDb,
  options: { readonly namespace?: string | undefined } = {},
): Promise<JobsReport> {
  const { rows: present } = await db.query("SELECT to_regclass('pglock_jobs') IS NOT NULL AS present");
  if (present[0]?.present !== true) {
    return {
      takenAt: new Date().toISOString(),
      jobs: [],
      leaders: [],
      warnings: [
        'this database has no pglock_jobs table (in the connection’s search_path): `pglock schema` prints its DDL',
      ],
    };
  }
  const { rows } = await db.query(jobsQuery, [options.namespace ?? null]);
  return buildJobsReport(rows, rows[0] === undefined ? Date.now() : Number(rows[0].now_ms));
}

/**
 * Builds the report from the rows of {@link readJobsReport}'s statement (`key`, `row` as jsonb,
 * `pid`, `app`) at `nowMs`: a row with a schedule or a recorded run is a job, a row with a term is a
 * leader (one row may be both).
 *
 * @example
 * ```ts
 * import { buildJobsReport } from '@pglock/cli';
 *
 * const report = buildJobsReport([{ key: '1', row: { name: 'digest', per_ms: 60_000, term: 0 }, pid: null, app: null }], Date.now());
 * ```
 */
export function buildJobsReport(rows: readonly Record<string, unknown>[], nowMs: number): JobsReport {
  const jobs: JobEntry[] = [];
  const leaders: LeaderEntry[] = [];
  for (const { key, row: raw, pid, app } of rows) {
    const row = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Record<string, unknown>;
    const base = {
      key: String(key),
      name: String(row.name),
      namespace: typeof row.namespace === 'string' ? row.namespace : null,
    };
    const holder = pid === null || pid === undefined ? null : Number(pid);
    const perMs = numberOr(row.per_ms);
    const periodStart = timeOr(row.period_start);
    if (perMs !== null || stringOr(row.cron) !== null || periodStart !== null) {
      const schedule: JobSchedule = {
        perMs,
        ...present(row, 'cron', stringOr),
        ...present(row, 'time_zone', stringOr, 'timeZone'),
      };
      const lastRun: JobRun = {
        periodStart,
        ...present(row, 'period_end', timeOr, 'periodEnd'),
        at: timeOr(row.ran_at),
        ...present(row, 'run_ms', numberOr, 'durationMs'),
        ...present(row, 'outcome', stringOr),
        ...present(row, 'attempts', numberOr),
        ...present(row, 'attempt_period', timeOr, 'attemptPeriod'),
        ...present(row, 'last_error', stringOr, 'lastError'),
      };
      const next = nextDue(perMs, periodStart, timeOr(row.period_end), nowMs);
      jobs.push({
        ...base,
        schedule,
        lastRun,
        nextDue: next === null ? null : new Date(next).toISOString(),
        due: next !== null && next <= nowMs,
        running: holder !== null,
      });
    }
    const term = numberOr(row.term) ?? 0;
    if (term > 0) {
      leaders.push({
        ...base,
        term,
        since: timeOr(row.elected_at),
        ...present(row, 'identity', stringOr),
        holder: holder === null ? null : { pid: holder, application: typeof app === 'string' ? app : null },
      });
    }
  }
  return { takenAt: new Date(nowMs).toISOString(), jobs, leaders, warnings: [] };
}

/** When the next tick runs the job (epoch ms), or `null` when the row cannot say. */
function nextDue(
  perMs: number | null,
  start: string | null,
  end: string | null,
  nowMs: number,
): number | null {
  const current = perMs === null || perMs <= 0 ? null : nowMs - (nowMs % perMs);
  const after =
    end !== null ? Date.parse(end) : start !== null && perMs !== null ? Date.parse(start) + perMs : null;
  if (after === null) return current;
  // A period that passed without a run: the current one is due now (a per job knows where it began).
  return current !== null && after < current ? current : after;
}

/** `{ [as]: read(row[column]) }` when the row has the column, else nothing: absent, not null. */
function present<T>(
  row: Record<string, unknown>,
  column: string,
  read: (value: unknown) => T,
  as: string = column,
): Record<string, T> {
  return Object.hasOwn(row, column) ? { [as]: read(row[column]) } : {};
}

function numberOr(value: unknown): number | null {
  return typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : null;
}

function stringOr(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function timeOr(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? value : new Date(ms).toISOString();
}
