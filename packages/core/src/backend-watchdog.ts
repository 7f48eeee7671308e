import { backendAliveStatement } from './backend-statements.ts';
import type { PortConnection, Row } from './lock-port.ts';
import { cell } from './row-cell.ts';
import type { Statement } from './statement.ts';

/** How long one of pglock's own statements may go unanswered before its backend is asked after. */
export const WATCHDOG_AFTER_MS = 2_000;

/**
 * `connection` whose statements also settle when their backend has gone: once one has waited
 * `afterMs` unanswered, another connection (`elsewhere`) is asked every `afterMs` whether backend
 * `pid` still exists, and when it does not the statement rejects with a `CONNECTION_CLOSED` error.
 * For pglock's own short statements in a transaction (runOnce's records): postgres.js settles no
 * statement in flight when its connection closes (porsager/postgres#1097), which left a runOnce
 * waiting for good in the chaos run; a statement that is merely slow is waited for as before.
 *
 * @example
 * ```ts
 * import { watchedConnection } from './backend-watchdog.ts';
 *
 * const watched = watchedConnection(connection, pid, (statement) => port.query(db, statement));
 * await watched.query(statement); // rejects if backend `pid` ends while it waits
 * ```
 */
export function watchedConnection(
  connection: PortConnection,
  pid: number,
  elsewhere: (statement: Statement) => Promise<readonly Row[]>,
  afterMs = WATCHDOG_AFTER_MS,
): PortConnection {
  // Its methods are bound, not spread: a port's connection may be a class with them on its prototype.
  const { transactionStatus, cancel } = connection;
  return {
    query: (statement) => watched(connection.query(statement), pid, elsewhere, afterMs),
    ...(transactionStatus === undefined
      ? {}
      : { transactionStatus: () => transactionStatus.call(connection) }),
    ...(cancel === undefined ? {} : { cancel: () => cancel.call(connection) }),
    get reportsFailedCommit() {
      return connection.reportsFailedCommit;
    },
  };
}

function watched<T>(
  running: Promise<T>,
  pid: number,
  elsewhere: (statement: Statement) => Promise<readonly Row[]>,
  afterMs: number,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  const gone = new Promise<never>((_, reject) => {
    const check = (): void => {
      elsewhere(backendAliveStatement(pid)).then(
        ([row]) => {
          if (settled) return;
          if (Number(cell(row ?? {}, 'alive')) === 0) {
            reject(
              Object.assign(
                new Error(`backend ${pid} ended while pglock's statement waited for its answer`),
                {
                  code: 'CONNECTION_CLOSED',
                },
              ),
            );
            return;
          }
          timer = setTimeout(check, afterMs);
          timer.unref();
        },
        // No answer from elsewhere says nothing about this backend: ask again later.
        () => {
          if (settled) return;
          timer = setTimeout(check, afterMs);
          timer.unref();
        },
      );
    };
    timer = setTimeout(check, afterMs);
    timer.unref();
  });
  gone.catch(() => undefined);
  return Promise.race([running, gone]).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}
