import { runConformance } from '@pglock/test-kit';
import { clientHarness, poolHarness } from './harness.ts';

runConformance(poolHarness);
runConformance(clientHarness);
