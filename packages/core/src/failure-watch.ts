import { AsyncLocalStorage } from 'node:async_hooks';
import type { PortConnection } from './lock-port.ts';

/** What the hook saw while one transaction's callback ran. */
type Watch = { failed: boolean; readonly unscoped: number };

/**
 * A transaction's status for an ORM that says neither that a statement failed inside its
 * transaction nor that PostgreSQL answered the COMMIT with ROLLBACK, but lets a hook see every
 * operation it runs (Prisma's `query.$allOperations`). The hook notes a failure in the transaction
 * whose callback it ran in; a failure seen outside every watched callback makes each running one
 * unknown. With it, core asks PostgreSQL (`SELECT 1` before the commit) only when something failed.
 */
export interface FailureWatch {
  /** The hook: runs `operation` and notes its failure. */
  observe<T>(operation: () => PromiseLike<T>): Promise<T>;
  /**
   * Runs `body` as one transaction's callback, with `connection` plus a `transactionStatus` that
   * answers from what the hook saw meanwhile.
   */
  run<R>(connection: PortConnection, body: (watched: PortConnection) => Promise<R>): Promise<R>;
}

/**
 * A new {@link FailureWatch}.
 *
 * @example
 * ```ts
 * import { failureWatch } from '@pglock/core/adapter';
 *
 * const failures = failureWatch();
 * const hook = ({ args, query }) => failures.observe(() => query(args));
 * await failures.run({ query: (s) => run(tx, s) }, (connection) => body(tx, connection));
 * ```
 */
export function failureWatch(): FailureWatch {
  const watches = new AsyncLocalStorage<Watch>();
  // Failed operations seen outside any watched callback: each makes every running transaction check.
  let unscoped = 0;
  // Enabled only while a watched callback runs: on Node 20 and 22 an enabled store makes every
  // promise of the process pay for promise hooks (see nesting.ts).
  let running = 0;
  return {
    async observe(operation) {
      try {
        return await operation();
      } catch (error) {
        const watch = watches.getStore();
        if (watch) watch.failed = true;
        else unscoped++;
        throw error;
      }
    },
    async run(connection, body) {
      const watch: Watch = { failed: false, unscoped };
      const transactionStatus = () =>
        !watch.failed && watch.unscoped === unscoped ? ('transaction' as const) : undefined;
      running++;
      try {
        return await watches.run(watch, body, { ...connection, transactionStatus });
      } finally {
        if (--running === 0) watches.disable();
      }
    },
  };
}
