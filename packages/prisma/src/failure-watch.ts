import type { PortConnection } from '@pglock/core/adapter';
import { currentLockConnection } from '@pglock/core/internal';

/** What the hook saw while one transaction's callback ran. */
type Watch = { failed: boolean; readonly unscoped: number };

/** Where a watched connection keeps its watch (module-private: nothing else reads or forges it). */
const WATCH = Symbol('pglock.failureWatch');
type WatchedConnection = PortConnection & { readonly [WATCH]?: Watch };

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
   * Runs `body` as one transaction's body, with `connection` plus a `transactionStatus` that
   * answers from what the hook saw while core ran the callback on that connection.
   */
  run<R>(connection: PortConnection, body: (watched: PortConnection) => Promise<R>): Promise<R>;
}

/**
 * A new {@link FailureWatch}.
 *
 * A failure is scoped by core's own lock context, the `AsyncLocalStorage` that core runs every
 * callback in for its nesting rule: the hook reads the context it runs in and marks the watch of
 * that context's connection. A store of its own would be a second store enabled beside core's, and
 * on Node 20 and 22 every enabled store adds its work to every promise of the process (Prisma makes
 * dozens per query).
 *
 * @example
 * ```ts
 * import { failureWatch } from './failure-watch.ts';
 *
 * const failures = failureWatch();
 * const hook = ({ args, query }) => failures.observe(() => query(args));
 * await failures.run({ query: (s) => run(tx, s) }, (connection) => body(tx, connection));
 * ```
 */
export function failureWatch(): FailureWatch {
  // Failed operations seen outside any watched callback: each makes every running transaction check.
  let unscoped = 0;
  // Failures counted as unscoped, so that pglock's own statement that failed can take its count back.
  const counted = new WeakSet<object>();
  return {
    async observe(operation) {
      try {
        return await operation();
      } catch (error) {
        const watch = (currentLockConnection() as WatchedConnection | undefined)?.[WATCH];
        if (watch) watch.failed = true;
        else {
          unscoped++;
          if (typeof error === 'object' && error !== null) counted.add(error);
        }
        throw error;
      }
    },
    run(connection, body) {
      const watch: Watch = { failed: false, unscoped };
      const watched: WatchedConnection = {
        ...connection,
        // pglock's own statements run before the callback, outside its context: one that fails (a
        // wait that timed out or was cancelled) fails this call, which rolls back anyway, and must
        // not make every other running transaction ask PostgreSQL before its commit.
        query: async (statement) => {
          try {
            return await connection.query(statement);
          } catch (error) {
            if (typeof error === 'object' && error !== null && counted.delete(error)) unscoped--;
            throw error;
          }
        },
        transactionStatus: () =>
          !watch.failed && watch.unscoped === unscoped ? ('transaction' as const) : undefined,
        [WATCH]: watch,
      };
      return body(watched);
    },
  };
}
