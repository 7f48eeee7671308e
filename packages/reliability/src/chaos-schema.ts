/** The small key set every worker fights over: few keys, so that sections contend all the time. */
export const chaosKeys = ['chaos:a', 'chaos:b', 'chaos:c'] as const;

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
