import { runConformance } from '@pglock/test-kit';
import { inject } from 'vitest';
import { postgresDialectControlHarness, postgresJsHarness } from './harness.ts';

const bouncer = inject('pgbouncer');

if ('transactionUrl' in bouncer) {
  const label = 'via PgBouncer (transaction pooling)';
  runConformance(postgresDialectControlHarness, { url: bouncer.transactionUrl, label });
  runConformance(postgresJsHarness, { url: bouncer.transactionUrl, label });
}
