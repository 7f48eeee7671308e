import { describe, expect, it } from 'vitest';
import { commitStatement, rollbackStatement } from '../src/transaction-statements.ts';

describe('transaction statements', () => {
  it('COMMIT and ROLLBACK are plain texts without parameters', () => {
    expect(commitStatement).toEqual({ text: 'COMMIT', fragments: ['COMMIT'], values: [] });
    expect(rollbackStatement).toEqual({ text: 'ROLLBACK', fragments: ['ROLLBACK'], values: [] });
  });
});
