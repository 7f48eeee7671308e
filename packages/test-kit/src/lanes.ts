/**
 * Which part of the test matrix a run covers, read from the environment (as Kysely's `DIALECTS`):
 *
 * - `PGLOCK_LANE`:
 *   - `ci` (the default, what `pnpm test` runs): the sliced matrix. The whole kit once per adapter
 *     and driver family and once through PgBouncer; every other harness (a `pg.Client` beside a
 *     `Pool`, camel transforms, a control instance or none) runs the suites its difference can
 *     affect, as its adapter's `test/matrix.ts` says beside each entry.
 *   - `fast` (`pnpm test:fast`): the whole kit on the first harness of each adapter, the unit tests
 *     and each adapter's own tests; no PgBouncer, no reliability or example runs.
 *   - `family`: the whole kit on one harness per driver family (node-postgres, postgres.js, Prisma's
 *     adapter-pg), for a second server version and for the peer-range version lanes.
 *   - `all`: every harness with every suite, directly and through PgBouncer (the unsliced matrix).
 * - `PGLOCK_HARNESSES`: a comma-separated list of harness ids (`pg-pool`, `kysely-postgres-js`…;
 *   `pnpm test -- --list` style ids are printed in each suite title) to run, whatever the lane says.
 * - `PGLOCK_SUITES`: a comma-separated list of suite names (`nesting,queue`) to run.
 */
export type Lane = 'ci' | 'fast' | 'family' | 'all';

const lanes: readonly Lane[] = ['ci', 'fast', 'family', 'all'];

/** The lane of this run (`PGLOCK_LANE`, default `ci`); an unknown name is an error, not a silent default. */
export function currentLane(env: NodeJS.ProcessEnv = process.env): Lane {
  const lane = env.PGLOCK_LANE?.trim() || 'ci';
  if (!(lanes as readonly string[]).includes(lane)) {
    throw new Error(`PGLOCK_LANE=${lane} is not a lane; use one of ${lanes.join(', ')}`);
  }
  return lane as Lane;
}

/** A comma-separated list from the environment, or undefined when the variable is unset or empty. */
export function listFromEnv(name: string, env: NodeJS.ProcessEnv = process.env): Set<string> | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  return new Set(
    raw
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  );
}

/** A harness name as an id for `PGLOCK_HARNESSES`: `drizzle (postgres.js, prepare: false)` → `drizzle-postgres-js-prepare-false`. */
export function harnessId(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}
