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
}

/** What {@link watchPostgresJsWrites} gives a worker. */
export interface WriteWatch {
  /** Pass to the postgres.js client (its `debug` and `onclose` options). */
  readonly hooks: PostgresJsHooks;
  /** The write that threw from postgres.js's timer, once one has. */
  fatal(): FatalWrite | undefined;
  /** Statements queued on connections postgres.js reported closed and never flushed (a stuck call waits on them). */
  unflushed(): string[];
}

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
          fatal ??= {
            connection,
            statements,
            closedBefore: close !== undefined,
            closedMsBefore: close && Math.round(performance.now() - close.at),
            writtenSinceClose: close?.written,
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
        const queued = pending.get(connection) ?? [];
        // A connection whose timer never fired (a synchronous flush) keeps only its latest statements.
        queued.push(text.replace(/\s+/g, ' ').trim().slice(0, 200));
        pending.set(connection, queued.slice(-5));
      },
      onclose(connection) {
        closed.set(connection, { at: performance.now(), written: false });
      },
    },
    fatal: () => fatal,
    unflushed: () =>
      [...pending]
        .filter(([connection]) => closed.has(connection) && !closed.get(connection)?.written)
        .map(([connection, statements]) => `connection ${connection} (closed): ${statements.join(' + ')}`),
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
