import { runConformance } from '@pglock/test-kit';
import {
  nodePgClientHarness,
  nodePgPoolHarness,
  pgliteHarness,
  postgresJsCamelHarness,
  postgresJsHarness,
} from './harness.ts';

runConformance(nodePgPoolHarness);
runConformance(nodePgClientHarness);
runConformance(postgresJsHarness);
runConformance(postgresJsCamelHarness);
runConformance(pgliteHarness);
