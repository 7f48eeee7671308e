import { connectionSuites, type MatrixEntry, poolerSuites, resultSuites } from '@pglock/test-kit';
import {
  nodePgClientHarness,
  nodePgPoolHarness,
  pgliteHarness,
  postgresJsCamelHarness,
  postgresJsHarness,
  postgresJsUnpreparedHarness,
} from './harness.ts';

/** @pglock/drizzle's rows of the test matrix (lanes: packages/test-kit/src/lanes.ts); one test file each. */
export const matrix = {
  /** drizzle-orm/node-postgres over a Pool: the whole kit. */
  nodePgPool: { harness: nodePgPoolHarness, suites: 'all', primary: true, family: 'node-postgres' },
  /** Over one `pg.Client`: only connection handling differs from the Pool. */
  nodePgClient: { harness: nodePgClientHarness, suites: connectionSuites },
  /** drizzle-orm/postgres-js: the whole kit (its own transactions, `sql.begin`, reserved connections). */
  postgresJs: { harness: postgresJsHarness, suites: 'all', family: 'postgres.js' },
  /** postgres.js with `transform: camel`: only the rows pglock reads back can differ. */
  postgresJsCamel: { harness: postgresJsCamelHarness, suites: resultSuites },
  /** PGlite: the whole kit (one in-process connection; the contention suites skip with the reason). */
  pglite: { harness: pgliteHarness, suites: 'all' },
  /**
   * Through PgBouncer (transaction mode): the pooler suites for each network driver (pg's Pool runs
   * the whole kit through it); postgres.js as a pooler needs it, with `prepare: false`.
   */
  nodePgPoolViaPgBouncer: { harness: nodePgPoolHarness, suites: poolerSuites, viaPgBouncer: true },
  postgresJsViaPgBouncer: { harness: postgresJsUnpreparedHarness, suites: poolerSuites, viaPgBouncer: true },
} as const satisfies Record<string, MatrixEntry>;
