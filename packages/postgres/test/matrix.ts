import { type MatrixEntry, poolerSuites, resultSuites } from '@pglock/test-kit';
import { postgresJsCamelHarness, postgresJsHarness, postgresJsUnpreparedHarness } from './harness.ts';

/** @pglock/postgres's rows of the test matrix (lanes: packages/test-kit/src/lanes.ts); one test file each. */
export const matrix = {
  /** `postgres(url)`: the whole kit (`sql.begin`, session locks on connections of their own, postgres.js's own cancels). */
  postgresJs: {
    harness: postgresJsHarness,
    suites: 'all',
    primary: true,
    family: 'postgres.js',
    leadsFamily: true,
  },
  /** `transform: camel`: only the rows pglock reads back can differ. */
  postgresJsCamel: { harness: postgresJsCamelHarness, suites: resultSuites },
  /** Through PgBouncer (transaction mode), where postgres.js needs `prepare: false`: the pooler suites. */
  postgresJsViaPgBouncer: { harness: postgresJsUnpreparedHarness, suites: poolerSuites, viaPgBouncer: true },
} as const satisfies Record<string, MatrixEntry>;
