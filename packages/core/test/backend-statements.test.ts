import { describe, expect, it } from 'vitest';
import { backendAliveStatement, unlockAllStatement } from '../src/backend-statements.ts';

describe('backend statements', () => {
  it('unlockAllStatement clears every session lock of the connection, with no parameters', () => {
    expect(unlockAllStatement).toEqual({
      text: 'SELECT pg_advisory_unlock_all() AS ok',
      fragments: ['SELECT pg_advisory_unlock_all() AS ok'],
      values: [],
    });
  });

  it('backendAliveStatement binds the pid as a parameter of one fixed text', () => {
    const text = 'SELECT count(*)::int AS alive FROM pg_stat_activity WHERE pid = $1::text::int';
    expect(backendAliveStatement(4242)).toEqual({
      text,
      fragments: ['SELECT count(*)::int AS alive FROM pg_stat_activity WHERE pid = ', '::text::int'],
      values: ['4242'],
    });
    const other = backendAliveStatement(7);
    expect(other.text).toBe(text);
    expect(other.values).toEqual(['7']);
    expect(other.fragments).toBe(backendAliveStatement(4242).fragments);
  });
});
