import { runConformance } from '@pglock/test-kit';
import { prismaHarness } from './harness.ts';

runConformance(prismaHarness);
