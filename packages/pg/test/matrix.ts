import { connectionSuites, type MatrixEntry } from '@pglock/test-kit';
import { clientHarness, poolHarness } from './harness.ts';

/** @pglock/pg's rows of the test matrix (lanes: packages/test-kit/src/lanes.ts); one test file each. */
export const matrix = {
  /** node-postgres: the whole kit. */
  pool: { harness: poolHarness, suites: 'all', primary: true, family: 'node-postgres', leadsFamily: true },
  /** One `pg.Client`: only connection handling differs (one transaction at a time, nothing to hand back). */
  client: { harness: clientHarness, suites: connectionSuites },
  /** The whole kit once through PgBouncer in transaction mode (the session suites expect refusals). */
  poolViaPgBouncer: { harness: poolHarness, suites: 'all', viaPgBouncer: true },
} as const satisfies Record<string, MatrixEntry>;
