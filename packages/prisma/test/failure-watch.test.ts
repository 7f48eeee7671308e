import { describe, expect, it } from 'vitest';
import type { PortConnection } from '../../core/src/lock-port.ts';
// Core's lock context, entered here as core enters it around a callback (the watch is scoped by it).
import { runInContext } from '../../core/src/nesting.ts';
import { statement } from '../../core/src/statement.ts';
import { failureWatch } from '../src/failure-watch.ts';

describe('failureWatch', () => {
  it('a failure in a callback makes its status unknown, not another callback’s', async () => {
    const failures = failureWatch();
    const query = async () => [];
    // As core runs them: the port's body gets the watched connection, and core runs the callback in
    // a lock context on it (the watch is scoped by that context).
    const callback = (connection: PortConnection, fn: () => Promise<unknown>) =>
      runInContext(
        {
          root: {},
          tx: {},
          connection,
          depth: 1,
          parent: undefined,
          nested: undefined,
          open: true,
          activity: 0,
          lost: undefined,
          request: undefined,
          verb: undefined,
        },
        fn,
        undefined,
      );
    const statuses = await Promise.all([
      failures.run({ query }, async (connection) => {
        await callback(connection, () =>
          failures.observe(() => Promise.reject(new Error('failed'))).catch(() => undefined),
        );
        return connection.transactionStatus?.();
      }),
      failures.run({ query }, async (connection) => {
        await callback(connection, async () => undefined);
        return connection.transactionStatus?.();
      }),
    ]);
    expect(statuses).toEqual([undefined, 'transaction']);
  });

  it('a failure outside every callback makes each running one unknown, unless it was pglock’s own statement', async () => {
    const failures = failureWatch();
    const refused = new Error('lock timeout');
    const own = { query: () => failures.observe(() => Promise.reject(refused)) as Promise<never> };
    const outside = () => failures.observe(() => Promise.reject(new Error('failed'))).catch(() => undefined);
    const status = await failures.run({ query: async () => [] }, async (connection) => {
      // pglock's own statement through the watched connection of another call: taken back.
      await failures.run(own, (watched) => watched.query(statement('SELECT 1'))).catch(() => undefined);
      const before = connection.transactionStatus?.();
      await outside();
      return [before, connection.transactionStatus?.()];
    });
    expect(status).toEqual(['transaction', undefined]);
  });
});
