import { describe, inject, it } from 'vitest';
import { runConformance, type SuiteName, suites } from './conformance.ts';
import type { ProcessesElsewhere } from './context.ts';
import type { AdapterHarness } from './harness.ts';
import { currentLane, harnessId, type Lane, listFromEnv } from './lanes.ts';
import type {} from './provided-context.ts';

/** The driver families the `family` lane runs one harness of (a second server version, version lanes). */
export type DriverFamily = 'node-postgres' | 'postgres.js' | 'prisma' | 'pglite';

/**
 * One row of an adapter's test matrix: a harness, and which suites it runs in the `ci` lane.
 *
 * @example
 * ```ts
 * import { type MatrixEntry, runMatrixEntry } from '@pglock/test-kit';
 * import { clientHarness } from './harness.ts';
 *
 * // One pg.Client: only connection handling differs from the Pool.
 * const client: MatrixEntry = { harness: clientHarness, suites: ['exclusion', 'release', 'faults'] };
 * runMatrixEntry(client);
 * ```
 */
export interface MatrixEntry {
  readonly harness: AdapterHarness;
  /**
   * `'all'`: the whole kit (the first harness of an adapter and driver family, or the PgBouncer run).
   * Otherwise the suites this harness's difference from that one can affect; the adapter's matrix
   * says why beside the entry. Every lane but `ci` runs the whole kit for the entries it takes.
   */
  readonly suites: 'all' | readonly SuiteName[];
  /** Suites this harness never runs, in any lane (a capability gap the kit cannot detect), with why. */
  readonly except?: { readonly suites: readonly SuiteName[]; readonly reason: string } | undefined;
  /** The adapter's first harness: the `fast` lane runs its whole kit. */
  readonly primary?: boolean | undefined;
  /** Stands for its driver family in the `family` lane (at most one entry per family and adapter). */
  readonly family?: DriverFamily | undefined;
  /** Connects through the run's PgBouncer in transaction mode (skipped, with the reason, without one). */
  readonly viaPgBouncer?: boolean | undefined;
  /**
   * Whether a row with a suite list (not `'all'`) runs the tests of those suites that start worker
   * processes in the `ci` lane. Default false: see {@link processesElsewhere}.
   */
  readonly processes?: boolean | undefined;
  /**
   * Runs its driver family's worker-process tests in the `family` lane: one row per family across
   * the adapters, the driver's own adapter (`@pglock/pg`, `@pglock/postgres`, `@pglock/prisma`).
   * The lane is there for a second server version, and a worker reaches the test's process only
   * through the server, whose side of it (a holder's death, a lease ending, a schedule's row) is
   * the same whichever adapter's workers drive it; every adapter's workers run in the `ci` lane.
   */
  readonly leadsFamily?: boolean | undefined;
}

/**
 * Why a matrix row leaves out the tests that start worker processes, or undefined when it runs them.
 * In the `ci` lane, a row with a suite list: its difference from its adapter's whole-kit row (row
 * names, `pg.Client` vs `Pool`, a control instance or none, the pooler after the first run through
 * it) is in how this process reads rows and handles its own connections, which the single-process
 * tests of the same suites cover; what a worker process does reaches the test's process only
 * through the server. The cross-process tests, more than half of each row's time, run on the
 * whole-kit rows of every driver family and on the whole kit through PgBouncer. The `family` lane
 * runs them on the row of each family that {@link MatrixEntry.leadsFamily}; the `fast` and `all`
 * lanes, and a harness named in `PGLOCK_HARNESSES`, run them everywhere. A row sets
 * `processes: true` where its difference does reach them in the `ci` lane. (`PGLOCK_PROCESSES=0` turns them off for a whole run:
 * context.ts.)
 *
 * @example
 * ```ts
 * import { processesElsewhere } from '@pglock/test-kit';
 * import { matrix } from './matrix.ts';
 *
 * console.log(processesElsewhere(matrix.client)?.skipped ?? 'runs the worker-process tests');
 * ```
 */
export function processesElsewhere(
  entry: MatrixEntry,
  env: NodeJS.ProcessEnv = process.env,
): ProcessesElsewhere | undefined {
  if (listFromEnv('PGLOCK_HARNESSES', env) !== undefined) return undefined;
  const lane = currentLane(env);
  if (lane === 'family') {
    return entry.leadsFamily === true
      ? undefined
      : {
          skipped:
            "in the family lane worker processes run on each driver family's own adapter (leadsFamily in test-kit/src/matrix.ts)",
        };
  }
  if (lane !== 'ci' || entry.suites === 'all' || entry.processes === true) return undefined;
  return {
    skipped: "worker processes run on this adapter's whole-kit rows in the ci lane (test-kit/src/matrix.ts)",
  };
}

/** The id `PGLOCK_HARNESSES` selects an entry by: the harness id, `-via-pgbouncer` for the pooler run. */
export function entryId(entry: MatrixEntry): string {
  return `${harnessId(entry.harness.name)}${entry.viaPgBouncer ? '-via-pgbouncer' : ''}`;
}

/** Whether `lane` takes this entry at all (before `PGLOCK_HARNESSES`). */
function inLane(lane: Lane, entry: MatrixEntry): boolean {
  switch (lane) {
    case 'ci':
    case 'all':
      return true;
    case 'fast':
      return entry.primary === true && !entry.viaPgBouncer;
    case 'family':
      return entry.family !== undefined && !entry.viaPgBouncer;
  }
}

/** The suites an entry runs in this run, given the lane and the filters; empty when it does not run. */
export function selectSuites(
  entry: MatrixEntry,
  env: NodeJS.ProcessEnv = process.env,
): { readonly suites: readonly SuiteName[]; readonly why?: string } {
  const lane = currentLane(env);
  const harnesses = listFromEnv('PGLOCK_HARNESSES', env);
  const wanted = listFromEnv('PGLOCK_SUITES', env);
  const all = Object.keys(suites) as SuiteName[];
  for (const name of wanted ?? []) {
    if (!all.includes(name as SuiteName)) {
      throw new Error(`PGLOCK_SUITES names no suite "${name}"; the suites are ${all.join(', ')}`);
    }
  }
  const id = entryId(entry);
  let chosen: readonly SuiteName[];
  if (harnesses !== undefined) {
    if (!harnesses.has(id)) return { suites: [], why: `PGLOCK_HARNESSES does not name ${id}` };
    chosen = all;
  } else if (!inLane(lane, entry)) {
    return { suites: [], why: `not in the ${lane} lane (PGLOCK_LANE; see packages/test-kit/src/lanes.ts)` };
  } else {
    chosen = lane === 'ci' && entry.suites !== 'all' ? entry.suites : all;
  }
  const except = entry.except?.suites ?? [];
  chosen = chosen.filter((name) => !except.includes(name) && (wanted === undefined || wanted.has(name)));
  return chosen.length > 0
    ? { suites: chosen }
    : { suites: [], why: 'PGLOCK_SUITES selects none of its suites' };
}

/**
 * Registers one matrix entry's conformance run, or a skipped suite that says why it does not run
 * here (PgBouncer missing, another lane, a filter): a test file never ends up with no suite, which
 * vitest would fail as "No test suite found".
 *
 * @example
 * ```ts
 * import { runMatrixEntry } from '@pglock/test-kit';
 * import { matrix } from './matrix.ts';
 *
 * runMatrixEntry(matrix.poolViaPgBouncer);
 * ```
 */
export function runMatrixEntry(entry: MatrixEntry): void {
  const title = `conformance: ${entry.harness.name}${entry.viaPgBouncer ? ' via PgBouncer (transaction pooling)' : ''} [${entryId(entry)}]`;
  let url: string | undefined;
  if (entry.viaPgBouncer) {
    const bouncer = inject('pgbouncer');
    if ('missing' in bouncer) {
      describe.skip(`${title} (skipped: ${bouncer.missing})`, () => {
        it('needs PgBouncer in transaction mode', () => undefined);
      });
      return;
    }
    url = bouncer.transactionUrl;
  }
  const { suites: chosen, why } = selectSuites(entry);
  if (chosen.length === 0) {
    describe.skip(`${title} (skipped: ${why})`, () => {
      it('runs in another lane', () => undefined);
    });
    return;
  }
  runConformance(entry.harness, {
    url,
    label: `${entry.viaPgBouncer ? 'via PgBouncer (transaction pooling) ' : ''}[${entryId(entry)}]`,
    only: chosen,
    processes: processesElsewhere(entry),
  });
}

/*
 * The suites a harness's difference from its adapter's first harness can affect, in the `ci` lane.
 * Every lane but `ci` (and a harness named in PGLOCK_HARNESSES) runs the whole kit instead.
 */

/**
 * A lone client instead of a pool (`pg.Client`, Drizzle over one client): how a connection is taken,
 * shared by nested and concurrent calls, handed back (a leader's with its own settings) and lost. Not key derivation, option checks,
 * lock modes, transaction settings or events: those are the same code on the same statements.
 */
export const connectionSuites: readonly SuiteName[] = [
  'exclusion',
  'timeouts',
  'release',
  'faults',
  'misuse',
  'nesting',
  'rolledBack',
  'abort',
  'queue',
  'sessionLocks',
  'sharedSessionLocks',
  'scheduling',
  'schedules',
  'leaderObservers',
  'runLimits',
  'leaderLease',
];

/**
 * A driver option that renames result columns (postgres.js `transform: camel`): every suite in which
 * pglock reads a row back (try results, `isLocked`, `inspectLocks`, the jobs table, session pids and
 * heartbeats, a schedule's claim, the leader's saved `idle_session_timeout`). Not the suites whose statements return nothing pglock reads.
 */
export const resultSuites: readonly SuiteName[] = [
  'exclusion',
  'modes',
  'keyParity',
  'diagnostics',
  'sessionLocks',
  'sharedSessionLocks',
  'scheduling',
  'schedules',
  'leaderObservers',
  'runLimits',
  'leaderLease',
];

/**
 * No control instance beside the app's pool: cancelling a server-side wait, and every wait that a
 * cancel ends (bounded waits, the in-process queue, a killed holder, deadlocks between nested calls,
 * a job's or leader's wait, a leader's heartbeat from another connection and its lease).
 */
export const controlSuites: readonly SuiteName[] = [
  'exclusion',
  'timeouts',
  'queue',
  'faults',
  'nesting',
  'release',
  'sharedSessionLocks',
  'scheduling',
  'leaderObservers',
  'runLimits',
  'leaderLease',
];

/**
 * A transaction-mode pooler (PgBouncer) between the adapter and PostgreSQL, for the harnesses after
 * the one that runs the whole kit through it: sessions share server connections (session locks and
 * leaders are refused), `SET LOCAL` and savepoints must stay in one transaction, cancels are routed
 * by the pooler; runOnce's schedules work through it (transaction-scoped, with one more statement for
 * cron); `currentLeader` and `observeLeader` read through it (one statement each), the leaders they
 * watch connect directly. Not key derivation, option checks, lock modes or events.
 */
export const poolerSuites: readonly SuiteName[] = [
  'exclusion',
  'timeouts',
  'abort',
  'release',
  'faults',
  'nesting',
  'queue',
  'sessionLocks',
  'transactionSettings',
  'scheduling',
  'schedules',
  'leaderObservers',
  'runLimits',
];
