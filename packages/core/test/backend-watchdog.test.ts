import { describe, expect, it } from 'vitest';
import { watchedConnection } from '../src/backend-watchdog.ts';
import type { PortConnection, Row } from '../src/lock-port.ts';
import { saysConnectionEnded } from '../src/sql-state.ts';
import { statement } from '../src/statement.ts';

// The watchdog's own logic, without a server: a statement the driver never settles (what
// postgres.js does with one in flight at a close, porsager/postgres#1097) and the answers another
// connection gives about its backend.
const probe = statement('SELECT 1');

function connectionAnswering(answer: Promise<readonly Row[]>): PortConnection {
  return { query: () => answer, transactionStatus: () => 'transaction', reportsFailedCommit: true };
}

describe('watchedConnection', () => {
  it('a statement left unsettled rejects as a closed connection once another connection says its backend is gone', async () => {
    const asked: string[] = [];
    let alive = 1;
    const watched = watchedConnection(
      connectionAnswering(new Promise(() => undefined)),
      4242,
      async (s) => {
        asked.push(s.values.join());
        return [{ alive: alive-- > 0 ? 1 : 0 }];
      },
      20,
    );
    const error = await watched.query(probe).catch((e: unknown) => e);
    expect(saysConnectionEnded(error)).toBe(true);
    expect(String(error)).toMatch(/backend 4242 ended/);
    // Asked twice: alive the first time (the statement was only slow), gone the second.
    expect(asked).toEqual(['4242', '4242']);
  });

  it('an answered statement resolves as is and asks nothing; the connection keeps its other members', async () => {
    let asked = 0;
    const watched = watchedConnection(
      connectionAnswering(Promise.resolve([{ ok: true }])),
      7,
      async () => {
        asked++;
        return [{ alive: 0 }];
      },
      20,
    );
    expect(await watched.query(probe)).toEqual([{ ok: true }]);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(asked).toBe(0);
    expect(watched.transactionStatus?.()).toBe('transaction');
    expect(watched.reportsFailedCommit).toBe(true);
  });

  it('a failing question from elsewhere says nothing: the slow statement is waited for', async () => {
    let release: (rows: readonly Row[]) => void = () => undefined;
    const watched = watchedConnection(
      connectionAnswering(new Promise((resolve) => (release = resolve))),
      9,
      async () => {
        throw new Error('pool exhausted');
      },
      10,
    );
    const pending = watched.query(probe);
    await new Promise((resolve) => setTimeout(resolve, 50));
    release([{ ok: 1 }]);
    expect(await pending).toEqual([{ ok: 1 }]);
  });
});
