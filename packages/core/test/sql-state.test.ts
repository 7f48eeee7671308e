import { describe, expect, it } from 'vitest';
import { SqlState, saysConnectionEnded, sqlStateOf } from '../src/sql-state.ts';

/** An error as a driver makes it: a message and extra fields. */
const driverError = (fields: object, message = 'failed') => Object.assign(new Error(message), fields);

describe('sqlStateOf', () => {
  it('reads `code` (node-postgres, postgres.js, PGlite) and `sqlState`', () => {
    expect(sqlStateOf(driverError({ code: '55P03' }))).toBe('55P03');
    expect(sqlStateOf({ code: '40P01' })).toBe(SqlState.deadlockDetected);
    expect(sqlStateOf({ sqlState: '57014' })).toBe(SqlState.queryCanceled);
  });

  it('prefers `originalCode` over `code`', () => {
    expect(sqlStateOf({ originalCode: '40P01', code: '55P03' })).toBe('40P01');
  });

  it('Prisma 7: skips its own P2010 and finds the code in meta.driverAdapterError.cause', () => {
    const prisma = driverError({
      code: 'P2010',
      meta: { driverAdapterError: driverError({ cause: { originalCode: '40P01', kind: 'postgres' } }) },
    });
    expect(sqlStateOf(prisma)).toBe('40P01');
    expect(sqlStateOf({ code: 'P2010', meta: { code: '55P03' } })).toBe('55P03');
    expect(sqlStateOf({ code: 'P1001' })).toBeUndefined();
  });

  it('looks through `cause` where an ORM wraps the driver’s error (Drizzle’s DrizzleQueryError)', () => {
    const wrapped = driverError(
      { cause: driverError({ cause: driverError({ code: '25P02' }) }) },
      'Failed query',
    );
    expect(sqlStateOf(wrapped)).toBe(SqlState.inFailedTransaction);
    // The outer error's own code wins over its cause's.
    expect(sqlStateOf({ code: '42P01', cause: { code: '55P03' } })).toBe(SqlState.undefinedTable);
  });

  it('stops after five levels of wrapping, and on a cycle', () => {
    const nested = (levels: number): unknown =>
      levels === 0 ? { code: '57014' } : { cause: nested(levels - 1) };
    expect(sqlStateOf(nested(5))).toBe('57014');
    expect(sqlStateOf(nested(6))).toBeUndefined();
    const cycle: { cause?: unknown } = {};
    cycle.cause = cycle;
    expect(sqlStateOf(cycle)).toBeUndefined();
  });

  it('PL/pgSQL’s class P0 is a SQLSTATE: RAISE EXCEPTION’s P0001 is not a Prisma code', () => {
    expect(sqlStateOf(driverError({ code: 'P0001', severity: 'ERROR' }, 'raised by a trigger'))).toBe(
      'P0001',
    );
    expect(sqlStateOf({ cause: { code: 'P0004' } })).toBe('P0004');
  });

  it('a Node system error is no SQLSTATE, also where its code has five capitals (EPIPE)', () => {
    const socket = (code: string) => driverError({ code, errno: -32, syscall: 'write' }, `write ${code}`);
    for (const code of ['EPIPE', 'EBADF', 'E2BIG', 'ECONNRESET', 'ETIMEDOUT']) {
      expect(sqlStateOf(socket(code))).toBeUndefined();
    }
  });

  it.each([
    ['no object', 'boom'],
    ['null', null],
    ['no code', new Error('Connection terminated unexpectedly')],
    ['a lowercase code', { code: '55p03' }],
    ['four characters', { code: '5503' }],
    ['a number', { code: 55_003 }],
    ['a postgres.js client code', { code: 'CONNECTION_CLOSED' }],
  ])('undefined for %s', (_, error) => {
    expect(sqlStateOf(error)).toBeUndefined();
  });
});

describe('saysConnectionEnded', () => {
  it.each([
    ['terminated by the server', driverError({ code: '57P01' })],
    ['idle session timeout', driverError({ code: '57P05' })],
    ['a connection exception', driverError({ code: '08006' })],
    ['postgres.js closed', driverError({ code: 'CONNECTION_CLOSED' })],
    ['a reset socket', driverError({ code: 'ECONNRESET' })],
    ['node-postgres', new Error('Connection terminated unexpectedly')],
    [
      'node-postgres, a client that saw its connection fail',
      new Error('Client has encountered a connection error and is not queryable'),
    ],
    [
      "Drizzle's failed ROLLBACK on such a client",
      new Error('Failed query: rollback', { cause: new Error('Client was closed and is not queryable') }),
    ],
    ['wrapped by an ORM', new Error('query failed', { cause: driverError({ code: '57P01' }) })],
  ])('true for %s', (_, error) => {
    expect(saysConnectionEnded(error)).toBe(true);
  });

  it.each([
    ["the job's own error", new Error('on purpose')],
    ['a unique violation', driverError({ code: '23505' })],
    ['a cancel', driverError({ code: '57014' })],
    ['not an error', 'CONNECTION_CLOSED'],
  ])('false for %s', (_, error) => {
    expect(saysConnectionEnded(error)).toBe(false);
  });
});
