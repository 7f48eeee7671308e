import { runConformance, suites } from '@pglock/test-kit';
import {
  pgliteHarness,
  postgresDialectControlHarness,
  postgresDialectHarness,
  postgresJsAloneHarness,
  postgresJsCamelHarness,
  postgresJsHarness,
} from './harness.ts';

// The whole kit, with a control instance (what the README advises where waiters may fill the pool).
runConformance(postgresDialectControlHarness);
runConformance(postgresJsHarness);
runConformance(postgresJsCamelHarness);
// kysely-pglite-dialect (like Kysely 0.29's own PGlite dialect) drops accessMode, which the port
// cannot tell from Kysely's side: the README says so, and the settings suite is left out here.
runConformance(pgliteHarness, {
  only: (Object.keys(suites) as (keyof typeof suites)[]).filter((s) => s !== 'transactionSettings'),
});

// `db` alone: everything but what needs a connection beside the pool (a cancel while every pooled
// connection waits, a session lock on a pool of one); kysely-specifics.test.ts shows how those behave.
const alone = (Object.keys(suites) as (keyof typeof suites)[]).filter(
  (s) => s !== 'abort' && s !== 'sessionLocks',
);
runConformance(postgresDialectHarness, { only: alone, label: 'without control' });
runConformance(postgresJsAloneHarness, { only: alone, label: 'without control' });
