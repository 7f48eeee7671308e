import { describe, expect, it } from 'vitest';
import { heldKeysStatement, heldMarker, marked, tagOf } from '../src/hub-statements.ts';
import { lockKey } from '../src/lock-key.ts';
import { checkSessionConnection } from '../src/session-lock.ts';
import { statement } from '../src/statement.ts';

describe('shared connection statements', () => {
  it('heldMarker: nothing while nothing is held; the oldest grant time first, then each lock by tag', () => {
    expect(heldMarker(undefined)).toBe('');
    expect(heldMarker(undefined, [['1-2-1', '5']])).toBe('');
    expect(heldMarker('1764806400000')).toBe(' /* pglock:held-since:1764806400000 */');
    expect(
      heldMarker('10', [
        ['1-2-1', '10'],
        ['4294967295-0-2', '25'],
      ]),
    ).toBe(' /* pglock:held-since:10 pglock:held:1-2-1=10; pglock:held:4294967295-0-2=25; */');
  });

  it('marked appends the marker to the text and the last fragment, values untouched', () => {
    const plain = statement('SELECT pg_advisory_unlock($1::text::bigint) AS ok', ['42']);
    expect(marked(plain, '')).toBe(plain);
    const withMarker = marked(plain, ' /* pglock:held-since:7 */');
    expect(withMarker).toEqual({
      text: 'SELECT pg_advisory_unlock($1::text::bigint) AS ok /* pglock:held-since:7 */',
      fragments: ['SELECT pg_advisory_unlock(', '::text::bigint) AS ok /* pglock:held-since:7 */'],
      values: ['42'],
    });
  });

  it('tagOf is the classid-objid-objsubid of pg_locks, for both key forms', () => {
    expect(tagOf(lockKey(1n))).toBe('0-1-1');
    expect(tagOf(lockKey(-1n))).toBe('4294967295-4294967295-1');
    expect(tagOf(lockKey({ pair: [1, -1] }))).toBe('1-4294967295-2');
  });

  it('heldKeysStatement binds a pid asked from elsewhere, and carries the marker', () => {
    const own = heldKeysStatement(undefined, ' /* pglock:held-since:7 */');
    expect(own.values).toEqual([]);
    expect(own.text).toContain('l.pid = pg_backend_pid()');
    expect(own.text.endsWith(' /* pglock:held-since:7 */')).toBe(true);
    const other = heldKeysStatement(4242, '');
    expect(other.values).toEqual(['4242']);
    expect(other.text).toContain('l.pid = $1::text::int');
  });

  it("checkSessionConnection: 'shared' by default, the two modes, anything else refused by name", () => {
    expect(checkSessionConnection(undefined, 'acquireSessionLock')).toBe('shared');
    expect(checkSessionConnection('dedicated', 'acquireSessionLock')).toBe('dedicated');
    expect(() => checkSessionConnection(null, 'withSessionLock')).toThrow(
      "withSessionLock: connection must be 'shared' or 'dedicated' (got null).",
    );
    expect(() => checkSessionConnection('Shared', 'acquireSessionLock')).toThrow(/got 'Shared'/);
  });
});
