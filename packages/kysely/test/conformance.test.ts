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
// PGlite is another database than the kit's backdoor: suites that set up tables there cannot run.
runConformance(pgliteHarness, {
  only: ['exclusion', 'timeouts', 'release', 'modes', 'faults', 'input', 'queue', 'keyParity', 'diagnostics'],
});

// `db` alone: everything but what needs a connection beside the pool (a cancel while every pooled
// connection waits, a session lock on a pool of one); kysely-specifics.test.ts shows how those behave.
const alone = (Object.keys(suites) as (keyof typeof suites)[]).filter(
  (s) => s !== 'abort' && s !== 'sessionLocks',
);
runConformance(postgresDialectHarness, { only: alone, label: 'without control' });
runConformance(postgresJsAloneHarness, { only: alone, label: 'without control' });
