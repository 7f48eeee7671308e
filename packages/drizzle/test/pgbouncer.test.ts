import { runConformance } from '@pglock/test-kit';
import { describe, inject, it } from 'vitest';
import { nodePgClientHarness, nodePgPoolHarness, postgresJsUnpreparedHarness } from './harness.ts';

// The whole kit through PgBouncer in transaction mode, for each network driver (the session-lock
// suites expect refusals there; postgres.js is set up as a pooler needs, with `prepare: false`). Session mode is checked by the kit's session-lock suite on every run.
const bouncer = inject('pgbouncer');

if ('transactionUrl' in bouncer) {
  for (const harness of [nodePgPoolHarness, nodePgClientHarness, postgresJsUnpreparedHarness]) {
    runConformance(harness, { url: bouncer.transactionUrl, label: 'via PgBouncer (transaction pooling)' });
  }
} else {
  describe.skip(`conformance via PgBouncer (skipped: ${bouncer.missing})`, () => {
    it('needs PgBouncer', () => undefined);
  });
}
