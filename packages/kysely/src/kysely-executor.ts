import type { LockExecutor, Statement } from '@pglock/core';
import { type RawBuilder, sql } from 'kysely';
import type { KyselyExecutorLike } from './kysely-types.ts';

/**
 * A core {@link Statement} as Kysely SQL: its fragments as raw text and every value as a bound
 * parameter (`sql.val`), never inlined.
 */
export function statementSql(statement: Statement): RawBuilder<Record<string, unknown>> {
  const parts = statement.fragments.flatMap((fragment, i) =>
    i < statement.values.length ? [sql.raw(fragment), sql.val(statement.values[i])] : [sql.raw(fragment)],
  );
  // sql.join's separator defaults to ', ', which would land inside the SQL text.
  return sql<Record<string, unknown>>`${sql.join(parts, sql.raw(''))}`;
}

// The user's plugins (CamelCasePlugin renames result columns, WithSchemaPlugin rewrites identifiers)
// must not touch pglock's own statements, whose column names core reads.
function withoutPlugins(target: KyselyExecutorLike): KyselyExecutorLike {
  return { getExecutor: () => target.getExecutor().withoutPlugins() };
}

/** Runs one statement through Kysely and returns its rows. */
export async function runStatement(
  target: KyselyExecutorLike,
  statement: Statement,
): Promise<readonly Record<string, unknown>[]> {
  return (await statementSql(statement).execute(withoutPlugins(target))).rows;
}

const CANCEL_TIMEOUT_MS = 2_000;

/**
 * Runs core's statements on `target`'s connection. A wait is cancelled with `pg_cancel_backend`
 * on another connection of `root` (Kysely exposes no protocol cancel), limited to a backend that
 * is waiting for an advisory lock at that moment: a cancel that arrives late must not interrupt
 * whatever that pooled connection runs next. Without `root` (a bare transaction), `signal` is refused.
 */
export function kyselyExecutor(target: KyselyExecutorLike, root?: KyselyExecutorLike): LockExecutor {
  const query = (statement: Statement) => runStatement(target, statement);
  if (root === undefined) return { query };
  return {
    query,
    cancelNeedsPid: true,
    cancel: (pid) => cancelBackend(root, pid),
  };
}

async function cancelBackend(root: KyselyExecutorLike, pid: number | undefined): Promise<void> {
  if (pid === undefined || !Number.isInteger(pid)) throw new Error('no backend pid to cancel');
  const cancel = sql`SELECT pg_cancel_backend(pid) FROM pg_stat_activity
    WHERE pid = ${String(pid)}::text::int AND wait_event_type = 'Lock' AND wait_event = 'advisory'`;
  // With one connection (PGlite, a pool of max 1) the cancel queues behind the very wait it is
  // meant to end; give up on this attempt so that core can try again or finish.
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('the cancel found no free connection')), CANCEL_TIMEOUT_MS);
  });
  const running = cancel.execute(withoutPlugins(root));
  running.catch(() => undefined);
  try {
    await Promise.race([running, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
