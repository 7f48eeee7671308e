import { runConformance } from '@pglock/test-kit';
import { describe, inject, it } from 'vitest';
import { poolHarness } from './harness.ts';

// The whole kit through PgBouncer in transaction mode (every suite; the session-lock suites expect
// refusals there). Session mode is checked by the kit's session-lock suite on every run.
const bouncer = inject('pgbouncer');

if ('transactionUrl' in bouncer) {
  runConformance(poolHarness, { url: bouncer.transactionUrl, label: 'via PgBouncer (transaction pooling)' });
} else {
  describe.skip(`conformance via PgBouncer (skipped: ${bouncer.missing})`, () => {
    it('needs PgBouncer', () => undefined);
  });
}
