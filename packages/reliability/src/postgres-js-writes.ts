import type { PostgresJsHooks } from './subjects.ts';

/** The write that crashed a process from postgres.js's write timer, as far as the watch saw it. */
export interface FatalWrite {
  /** The postgres.js connection id, when the watch had learned which connection the timer belongs to. */
  readonly connection: number | undefined;
  /** The statements queued on that connection since its last flush: what the fatal write carried. */
  readonly statements: readonly string[];
  /** Whether postgres.js had reported that connection closed before the write. */
  readonly closedBefore: boolean;
  /** How long before the write it closed (ms), when it had. */
  readonly closedMsBefore?: number | undefined;
  /**
   * Whether anything was written on the connection between its close and this write (a reconnect
   * writes its startup message): false means the statement went to a connection that was dead all
   * along since it closed, whoever held it.
   */
  readonly writtenSinceClose?: boolean | undefined;
  /**
   * The statements of the write handed to the connection after postgres.js reported it closed (by
   * the watch's own record of hand-offs and closes); the rest were handed while it was open, and
   * only postgres.js's write timer, run after the close, wrote them.
   */
  readonly handedAfterClose?: readonly string[] | undefined;
}

/** What {@link watchPostgresJsWrites} gives a worker. */
export interface WriteWatch {
  /** Pass to the postgres.js client (its `debug` and `onclose` options). */
  readonly hooks: PostgresJsHooks;
  /** The write that threw from postgres.js's timer, once one has. */
  fatal(): FatalWrite | undefined;
  /** Statements queued on connections postgres.js reported closed and never flushed (a stuck call waits on them). */
  unflushed(): string[];
  /**
   * The last statements handed to each connection postgres.js reported closed, with the close, in
   * order (times from `performance.now()`): what a call stuck after a close last gave the driver.
   */
  lastBeforeClose(): string[];
  /**
   * The connection a statement that failed with the connection (`text`, as sent) was last handed to,
   * when its close came next and no COMMIT or ROLLBACK was handed to it after: a ROLLBACK the ORM
   * issued after the failure never reached the connection.
   */
  nothingHandedAfter(text: string): number | undefined;
  /**
   * The connection a statement that failed with the connection (`text`) was last handed to, when
   * what came next was only the ORM's own COMMIT or ROLLBACK and then the close: that end statement
   * was in flight when the connection closed, and postgres.js settles no statement in flight on a
   * close (porsager/postgres#1097, reproduced in test/teardown-evidence.test.ts).
   */
  endInFlightAtClose(text: string): number | undefined;
  /**
   * A connection whose last events are the ORM's own COMMIT and/or ROLLBACK and then its close, the
   * close after `since` (`performance.now()` time): the transaction's end was in flight when the
   * connection closed, and postgres.js settles no statement in flight on a close
   * (porsager/postgres#1097).
   */
  endedInFlightAtClose(since: number): number | undefined;
}

/** What a connection was handed (a statement), or that it closed; `at` from `performance.now()`. */
interface ConnectionEvent {
  readonly at: number;
  readonly statement: string | undefined;
}

const normalized = (text: string): string => text.replace(/\s+/g, ' ').trim().slice(0, 200);

/**
 * Watches which statements each postgres.js connection writes, so that a crash from its write timer
 * can say whose write it was. postgres.js batches small writes behind `setImmediate(nextWrite)`; when
 * the connection closes before the timer fires, `nextWrite` writes to a `null` socket and throws from
 * the timer, where no caller can catch it (porsager/postgres #1208, #1154, #1199). The statement in
 * that write decides who is answerable: pglock's own lock statements must never be written to a
 * connection that failed; the ORM's own COMMIT/ROLLBACK are the driver's bug alone.
 *
 * postgres.js calls `debug(connection, text)` for each statement right before it writes it, and each
 * connection's `nextWrite` is a function of its own: the first timer a statement schedules ties that
 * function to its connection. Test tooling only: it wraps the global `setImmediate` of the process.
 *
 * @example
 * ```ts
 * const watch = watchPostgresJsWrites();
 * const sql = postgres(url, { debug: watch.hooks.debug, onclose: watch.hooks.onclose });
 * process.on('uncaughtException', () => console.error(watch.fatal()));
 * ```
 */
export function watchPostgresJsWrites(): WriteWatch {
  let fresh: number | undefined;
  const pending = new Map<number, string[]>();
  const closed = new Map<number, { readonly at: number; written: boolean }>();
  // Every connection's latest statements and closes, kept after the flush (unlike `pending`).
  const latest = new Map<number, ConnectionEvent[]>();
  const remember = (connection: number, statement: string | undefined): void => {
    const events = latest.get(connection) ?? [];
    events.push({ at: performance.now(), statement });
    latest.set(connection, events.slice(-16));
  };
  const owners = new WeakMap<object, number | 'unknown'>();
  let fatal: FatalWrite | undefined;
  const original = globalThis.setImmediate;
  const patched = ((callback: (...args: unknown[]) => unknown, ...args: unknown[]) => {
    if (typeof callback !== 'function' || callback.name !== 'nextWrite') return original(callback, ...args);
    if (fresh !== undefined) {
      const known = owners.get(callback);
      // A timer scheduled right after another connection's statement could be tied to the wrong
      // connection; two different answers for one function make it unknown rather than wrong.
      owners.set(callback, known === undefined || known === fresh ? fresh : 'unknown');
      fresh = undefined;
    }
    const owner = owners.get(callback);
    const connection = typeof owner === 'number' ? owner : undefined;
    return original(
      (...timerArgs: unknown[]) => {
        const statements = connection === undefined ? [] : [...(pending.get(connection) ?? [])];
        try {
          const result = callback(...timerArgs);
          if (connection !== undefined) {
            pending.delete(connection);
            const close = closed.get(connection);
            if (close) close.written = true;
          }
          return result;
        } catch (error) {
          const close = connection === undefined ? undefined : closed.get(connection);
          const events = connection === undefined ? [] : (latest.get(connection) ?? []);
          fatal ??= {
            connection,
            statements,
            closedBefore: close !== undefined,
            closedMsBefore: close && Math.round(performance.now() - close.at),
            writtenSinceClose: close?.written,
            handedAfterClose:
              close === undefined
                ? undefined
                : events.flatMap((event) =>
                    event.statement !== undefined && event.at > close.at ? [event.statement] : [],
                  ),
          };
          throw error;
        }
      },
      ...args,
    );
  }) as typeof setImmediate;
  Object.defineProperties(patched, Object.getOwnPropertyDescriptors(original));
  globalThis.setImmediate = patched;
  return {
    hooks: {
      debug(connection, text) {
        fresh = connection;
        queueMicrotask(() => {
          if (fresh === connection) fresh = undefined;
        });
        const statement = normalized(text);
        const queued = pending.get(connection) ?? [];
        // A connection whose timer never fired (a synchronous flush) keeps only its latest statements.
        queued.push(statement);
        pending.set(connection, queued.slice(-5));
        remember(connection, statement);
      },
      onclose(connection) {
        closed.set(connection, { at: performance.now(), written: false });
        remember(connection, undefined);
      },
    },
    fatal: () => fatal,
    unflushed: () =>
      [...pending]
        .filter(([connection]) => closed.has(connection) && !closed.get(connection)?.written)
        .map(([connection, statements]) => `connection ${connection} (closed): ${statements.join(' + ')}`),
    lastBeforeClose: () =>
      [...closed]
        .slice(-5)
        .map(
          ([connection, close]) =>
            `connection ${connection} (closed ${Math.round(performance.now() - close.at)} ms ago, now ${Math.round(performance.now())}): ${(
              latest.get(connection) ?? []
            )
              .map(({ at, statement }) => `${Math.round(at)} ${statement?.slice(0, 60) ?? 'CLOSED'}`)
              .join(' | ')}`,
        ),
    nothingHandedAfter(text) {
      const wanted = normalized(text);
      for (const [connection, events] of latest) {
        const last = events.findLastIndex((event) => event.statement === wanted);
        const rest = last < 0 ? [] : events.slice(last + 1);
        // Its close came next, and no COMMIT or ROLLBACK reached it after (a reconnect may serve others).
        const ends = rest.some((event) => /^(commit|rollback)\b/i.test(event.statement ?? ''));
        if (rest[0] !== undefined && rest[0].statement === undefined && !ends) return connection;
      }
      return undefined;
    },
    endedInFlightAtClose(since) {
      for (const [connection, events] of latest) {
        const close = events.at(-1);
        if (close === undefined || close.statement !== undefined || close.at < since) continue;
        let i = events.length - 2;
        while (i >= 0 && /^(commit|rollback)\s*;?$/i.test(events[i]?.statement ?? '')) i--;
        if (i < events.length - 2) return connection;
      }
      return undefined;
    },
    endInFlightAtClose(text) {
      const wanted = normalized(text);
      for (const [connection, events] of latest) {
        const last = events.findLastIndex((event) => event.statement === wanted);
        if (last < 0) continue;
        const rest = events.slice(last + 1);
        const close = rest.findIndex((event) => event.statement === undefined);
        const ends = rest.slice(0, close);
        if (close > 0 && ends.every((event) => /^(commit|rollback)\s*;?$/i.test(event.statement ?? ''))) {
          return connection;
        }
      }
      return undefined;
    },
  };
}

/**
 * True when every statement of a fatal write is the ORM's own COMMIT or ROLLBACK (postgres.js's
 * `sql.begin` and Kysely's driver send them as `commit` / `rollback`): the one case a chaos run
 * excuses, since no lock library sends or can stop it.
 *
 * @example
 * ```ts
 * ormOwnEnd({ connection: 3, statements: ['commit'], closedBefore: true }); // true
 * ```
 */
export function ormOwnEnd(write: FatalWrite | undefined): boolean {
  return (
    write !== undefined &&
    write.statements.length > 0 &&
    write.statements.every((statement) => /^(commit|rollback)\s*;?$/i.test(statement))
  );
}

/**
 * True when a fatal write's statements were all handed to the connection while it was open, except
 * the ORM's own COMMIT or ROLLBACK after its close: the close came between the hand-off and
 * postgres.js's write timer, which then wrote to the closed socket (porsager/postgres #1208). No
 * caller can see that gap (the connection was open when it was handed the statement), so a lock
 * library's statement in such a write is excused by that name, with the evidence in the report.
 *
 * @example
 * ```ts
 * handedWhileOpen({ connection: 2, statements: ['WITH p AS (…)', 'rollback'], closedBefore: true, writtenSinceClose: false, handedAfterClose: ['rollback'] }); // true
 * ```
 */
export function handedWhileOpen(write: FatalWrite | undefined): boolean {
  return (
    write?.closedBefore === true &&
    write.writtenSinceClose === false &&
    write.statements.length > 0 &&
    write.handedAfterClose?.every((statement) => /^(commit|rollback)\s*;?$/i.test(statement)) === true
  );
}
