import { runConformance } from '@pglock/test-kit';
import { describe, inject, it } from 'vitest';
import { prismaHarness } from './harness.ts';

const bouncer = inject('pgbouncer');

if ('transactionUrl' in bouncer) {
  runConformance(prismaHarness, {
    url: bouncer.transactionUrl,
    label: 'via PgBouncer (transaction pooling)',
  });
} else {
  describe('conformance via PgBouncer (transaction pooling)', () => {
    it.skip(`skipped: ${bouncer.missing}`, () => undefined);
  });
}
