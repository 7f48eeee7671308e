import { describe, expect, it } from 'vitest';
import { statement, statementText } from '../src/statement.ts';

describe('statementText', () => {
  it('splits the text around its placeholders, once, into frozen fragments', () => {
    const text = statementText('SELECT pg_try_advisory_lock($1::text::bigint) AS ok, $2::text AS note');
    expect(text.fragments).toEqual([
      'SELECT pg_try_advisory_lock(',
      '::text::bigint) AS ok, ',
      '::text AS note',
    ]);
    expect(Object.isFrozen(text.fragments)).toBe(true);
    const first = text.bind(['1', 'a']);
    const second = text.bind(['2', 'b']);
    expect(first).toEqual({ text: text.text, fragments: text.fragments, values: ['1', 'a'] });
    expect(second.values).toEqual(['2', 'b']);
    // The text is parsed once: every bound statement shares its fragments.
    expect(second.fragments).toBe(first.fragments);
  });

  it('reads placeholders past $9 as one number each', () => {
    const sql = `SELECT ${Array.from({ length: 11 }, (_, i) => `$${i + 1}::int`).join(', ')}`;
    const text = statementText(sql);
    expect(text.fragments).toHaveLength(12);
    expect(text.fragments.at(-1)).toBe('::int');
    expect(text.bind(Array.from({ length: 11 }, String)).values).toHaveLength(11);
  });

  it('a text without placeholders has one fragment and takes no values', () => {
    const text = statementText('SELECT 1');
    expect(text.fragments).toEqual(['SELECT 1']);
    expect(text.bind([]).values).toEqual([]);
    expect(() => text.bind(['1'])).toThrow('pglock bug: 1 values for 0 placeholders in: SELECT 1');
  });

  it.each([
    ['SELECT $2', '$2'],
    ['SELECT $1, $1', '$1'],
    ['SELECT $1, $3', '$3'],
  ])('refuses placeholders out of order: %s', (sql, placeholder) => {
    expect(() => statementText(sql)).toThrow(
      `pglock bug: placeholder ${placeholder} out of order in: ${sql}`,
    );
  });

  it('refuses too few or too many values', () => {
    const text = statementText('SELECT $1::int, $2::int');
    expect(() => text.bind(['1'])).toThrow('pglock bug: 1 values for 2 placeholders');
    expect(() => text.bind(['1', '2', '3'])).toThrow('pglock bug: 3 values for 2 placeholders');
  });
});

describe('statement', () => {
  it('binds the values as given and keeps them out of the text', () => {
    const hostile = "'); SELECT pg_terminate_backend(pg_backend_pid()); --";
    const s = statement('SELECT $1::text AS v', [hostile]);
    expect(s.text).toBe('SELECT $1::text AS v');
    expect(s.fragments).toEqual(['SELECT ', '::text AS v']);
    expect(s.values).toEqual([hostile]);
  });

  it('copies and freezes the values: a later change to the caller’s array does not reach the statement', () => {
    const values = ['1'];
    const s = statement('SELECT $1::int', values);
    values[0] = '2';
    expect(s.values).toEqual(['1']);
    expect(Object.isFrozen(s.values)).toBe(true);
  });

  it('defaults to no values, and checks the count like bind', () => {
    expect(statement('SELECT 1')).toEqual({ text: 'SELECT 1', fragments: ['SELECT 1'], values: [] });
    expect(() => statement('SELECT $1::int')).toThrow('pglock bug: 0 values for 1 placeholders');
  });
});
