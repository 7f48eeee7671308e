import { JOBS_TABLE_DDL } from '@pglock/core';

/** The small key set every worker fights over: few keys, so that sections contend all the time. */
export const chaosKeys = ['chaos:a', 'chaos:b', 'chaos:c'] as const;

/** The `runOnce` jobs workers call, each with its fixed period (short, so that periods are many). */
export const chaosJobs = [
  { name: 'job:fast', per: 300 },
  { name: 'job:slow', per: 700 },
] as const;

/** The names workers campaign for with `leader`. */
export const chaosLeaders = ['leader:a', 'leader:b'] as const;

/**
 * How a worker reaches the server: straight to PostgreSQL, or through PgBouncer in transaction mode
 * (where transaction-scoped locks must keep excluding and session locks must be refused).
 */
export type ChaosLane = 'direct' | 'pgbouncer';

/** Tables of a chaos run, in a database of its own (so `pg_locks` and backends are the run's alone). */
export const chaosSchema = `
  CREATE TABLE chaos_sections (
    id bigserial PRIMARY KEY,
    worker text NOT NULL,
    key text NOT NULL,
    mode text NOT NULL CHECK (mode IN ('exclusive', 'shared')),
    scope text NOT NULL CHECK (scope IN ('transaction', 'session')),
    entered timestamptz NOT NULL,
    exited timestamptz NOT NULL,
    seen int NOT NULL,
    -- The backend that recorded it (through a pooler, the server connection the transaction ran on).
    pid int NOT NULL DEFAULT pg_backend_pid()
  );
  CREATE TABLE chaos_counters (key text PRIMARY KEY, value int NOT NULL);

  -- runOnce: one row per committed run, written in the job's transaction. The claim happens between
  -- tx_start (now(): the transaction's start) and ran_at (clock_timestamp() as the row is written).
  CREATE TABLE chaos_job_runs (
    id bigserial PRIMARY KEY,
    worker text NOT NULL,
    name text NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    -- A run that throws after writing its row: the row must roll back with it.
    doomed boolean NOT NULL,
    tx_start timestamptz NOT NULL DEFAULT now(),
    ran_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    pid int NOT NULL DEFAULT pg_backend_pid()
  );

  -- leader: every term pglock writes, logged by a trigger inside the election statement, so on the
  -- connection that holds the lock. held: that backend held the name's lock as it wrote the term.
  CREATE TABLE chaos_elections (
    id bigserial PRIMARY KEY,
    key bigint NOT NULL,
    name text NOT NULL,
    term bigint NOT NULL,
    elected_at timestamptz NOT NULL,
    pid int NOT NULL DEFAULT pg_backend_pid(),
    held boolean NOT NULL
  );
  -- A leader tick, recorded only when the statement saw the term's backend (above) still holding the
  -- lock in pg_locks after reading the clock, and the term still the name's latest.
  CREATE TABLE chaos_leader_ticks (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    term bigint NOT NULL,
    campaign text NOT NULL,
    at timestamptz NOT NULL
  );
  -- The fencing guard of docs/scheduling.md, and every write it accepted (in the order of the row lock).
  CREATE TABLE chaos_fence (name text PRIMARY KEY, term bigint NOT NULL);
  CREATE TABLE chaos_fenced_writes (
    id bigserial PRIMARY KEY,
    name text NOT NULL,
    term bigint NOT NULL,
    campaign text NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
  );
  CREATE FUNCTION chaos_log_election() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW.elected_at IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.term IS DISTINCT FROM OLD.term) THEN
      INSERT INTO chaos_elections (key, name, term, elected_at, held)
      VALUES (NEW.key, NEW.name, NEW.term, NEW.elected_at, EXISTS (
        SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND granted
           AND mode = 'ExclusiveLock' AND objsubid = 1
           AND classid = ((NEW.key >> 32) & 4294967295)::oid AND objid = (NEW.key & 4294967295)::oid
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())));
    END IF;
    RETURN NULL;
  END $$;
`;

/** pglock's table and the trigger that logs its elections (after {@link chaosSchema}). */
export const chaosJobsSchema = `${JOBS_TABLE_DDL}
  CREATE TRIGGER chaos_log_election AFTER INSERT OR UPDATE ON pglock_jobs
    FOR EACH ROW EXECUTE FUNCTION chaos_log_election();
`;

/** What a worker counts, reported as JSON lines on stdout. */
export interface WorkerStats {
  /** Sections whose callback returned (the COMMIT may still have failed: see `errors`). */
  completed: number;
  /** Tries that found a key taken (transaction-scoped and session). */
  busy: number;
  /** Bounded waits that ended with LockNotAcquiredError. */
  timedOut: number;
  /** Calls that rejected with anything else (terminated backend, dead connection, …). */
  errors: number;
  /** Session locks held (by a leader's try loop or a waiting standby). */
  sessionHeld: number;
  /** Session locks found lost: the signal aborted, or the section's check saw another holder. */
  sessionLost: number;
  /** Session locks refused with LockUsageError through the transaction-mode pooler (expected there). */
  sessionRefused: number;
  /** Session locks granted through the transaction-mode pooler: each is a violation. */
  poolerSessionLocks: number;
  /** runOnce calls: this call ran the job, the period was done, another caller was running it. */
  jobsRan: number;
  jobsDone: number;
  jobsBusy: number;
  /** Runs that threw on purpose after writing their row (which must roll back). */
  jobsThrown: number;
  /**
   * Runs given `maxRunMs: 40` whose job then outstays it (a `pg_sleep(0.2)` pglock must cancel, or
   * JavaScript work that ignores its signal): `JobTimedOutError`, and their row must roll back.
   */
  jobsTimedOut: number;
  /** leader campaigns started, terms led (onElected calls), and terms that ended with the lock lost. */
  campaigns: number;
  terms: number;
  termsLost: number;
  /** Fenced writes refused (a later term had written): a deposed leader's late write. */
  fencedRefused: number;
  /** Campaigns refused with LockUsageError through the transaction-mode pooler (expected there). */
  leaderRefused: number;
}

/** The zero of {@link WorkerStats}. */
export function zeroStats(): WorkerStats {
  return {
    completed: 0,
    busy: 0,
    timedOut: 0,
    errors: 0,
    sessionHeld: 0,
    sessionLost: 0,
    sessionRefused: 0,
    poolerSessionLocks: 0,
    jobsRan: 0,
    jobsDone: 0,
    jobsBusy: 0,
    jobsThrown: 0,
    jobsTimedOut: 0,
    campaigns: 0,
    terms: 0,
    termsLost: 0,
    fencedRefused: 0,
    leaderRefused: 0,
  };
}

/** The sum of two {@link WorkerStats}. */
export function addStats(a: WorkerStats, b: WorkerStats): WorkerStats {
  const sum = zeroStats();
  for (const key of Object.keys(sum) as (keyof WorkerStats)[]) sum[key] = a[key] + b[key];
  return sum;
}

/** {@link WorkerStats} read back from a worker's JSON line (missing fields count 0). */
export function statsOf(event: Record<string, unknown>): WorkerStats {
  const stats = zeroStats();
  for (const key of Object.keys(stats) as (keyof WorkerStats)[]) stats[key] = Number(event[key] ?? 0);
  return stats;
}
