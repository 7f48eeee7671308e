/** The adapters (and drivers) a chaos run mixes: each is a conformance harness of its package's tests. */
export const chaosAdapters = [
  { name: 'pg', module: '../../pg/test/harness.ts', exportName: 'poolHarness' },
  { name: 'drizzle-node-postgres', module: '../../drizzle/test/harness.ts', exportName: 'nodePgPoolHarness' },
  { name: 'drizzle-postgres-js', module: '../../drizzle/test/harness.ts', exportName: 'postgresJsHarness' },
  { name: 'kysely-pg', module: '../../kysely/test/harness.ts', exportName: 'postgresDialectHarness' },
  { name: 'kysely-postgres-js', module: '../../kysely/test/harness.ts', exportName: 'postgresJsHarness' },
  { name: 'prisma', module: '../../prisma/test/harness.ts', exportName: 'prismaHarness' },
] as const;

/** One of {@link chaosAdapters}. */
export type ChaosAdapter = (typeof chaosAdapters)[number];

/** The small key set every worker fights over: few keys, so that sections contend all the time. */
export const chaosKeys = ['chaos:a', 'chaos:b', 'chaos:c'] as const;

/** Tables of a chaos run, in a database of its own (so `pg_locks` and backends are the run's alone). */
export const chaosSchema = `
  CREATE TABLE chaos_sections (
    id bigserial PRIMARY KEY,
    worker text NOT NULL,
    key text NOT NULL,
    mode text NOT NULL CHECK (mode IN ('exclusive', 'shared')),
    entered timestamptz NOT NULL,
    exited timestamptz NOT NULL,
    seen int NOT NULL
  );
  CREATE TABLE chaos_counters (key text PRIMARY KEY, value int NOT NULL);
`;

/** What a worker counts, reported as JSON lines on stdout. */
export interface WorkerStats {
  /** Sections whose callback returned (the COMMIT may still have failed: see `errors`). */
  completed: number;
  /** Tries that found a key taken. */
  busy: number;
  /** Bounded waits that ended with LockNotAcquiredError. */
  timedOut: number;
  /** Calls that rejected with anything else (terminated backend, dead connection, …). */
  errors: number;
}
