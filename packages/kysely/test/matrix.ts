import { controlSuites, type MatrixEntry, poolerSuites, resultSuites } from '@pglock/test-kit';
import {
  pgliteHarness,
  postgresDialectControlHarness,
  postgresDialectHarness,
  postgresJsAloneHarness,
  postgresJsCamelHarness,
  postgresJsHarness,
} from './harness.ts';

// Without a control instance there is no connection beside the pool for a cancel while every pooled
// connection waits, or for a session lock on a pool of one: kysely-specifics.test.ts shows how those
// behave, and those suites are never run without one.
const alone = {
  suites: ['abort', 'sessionLocks', 'sharedSessionLocks'],
  reason: 'needs a connection beside the pool (a control instance)',
} as const;

/** @pglock/kysely's rows of the test matrix (lanes: packages/test-kit/src/lanes.ts); one test file each. */
export const matrix = {
  /** Kysely's PostgresDialect with a control instance (what the README advises): the whole kit. */
  postgresDialectControl: {
    harness: postgresDialectControlHarness,
    suites: 'all',
    primary: true,
    family: 'node-postgres',
  },
  /** kysely-postgres-js with a control instance: the whole kit. */
  postgresJs: { harness: postgresJsHarness, suites: 'all', family: 'postgres.js' },
  /** postgres.js with `transform: camel`: only the rows pglock reads back can differ. */
  postgresJsCamel: { harness: postgresJsCamelHarness, suites: resultSuites },
  /**
   * kysely-pglite-dialect (like Kysely 0.29's own PGlite dialect) drops accessMode, which the port
   * cannot tell from Kysely's side: the README says so, and the settings suite is left out.
   */
  pglite: {
    harness: pgliteHarness,
    suites: 'all',
    except: { suites: ['transactionSettings'], reason: 'the dialect drops accessMode' },
  },
  /** `db` alone (no control instance): the waits a cancel ends. */
  postgresDialect: { harness: postgresDialectHarness, suites: controlSuites, except: alone },
  postgresJsAlone: { harness: postgresJsAloneHarness, suites: controlSuites, except: alone },
  /** Through PgBouncer (transaction mode): the pooler suites for each driver. */
  postgresDialectControlViaPgBouncer: {
    harness: postgresDialectControlHarness,
    suites: poolerSuites,
    viaPgBouncer: true,
  },
  postgresJsViaPgBouncer: { harness: postgresJsHarness, suites: poolerSuites, viaPgBouncer: true },
} as const satisfies Record<string, MatrixEntry>;
