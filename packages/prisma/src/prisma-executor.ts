import type { LockExecutor } from '@pglock/core';
import type { PrismaRawQueryable } from './prisma-types.ts';

/**
 * Runs core's statements with `$queryRawUnsafe` on `db` (a transaction client, so every statement
 * runs on the transaction's connection). core's statements return only int, boolean and text
 * columns: Prisma maps those to plain values and cannot deserialize some others (a `void` column is
 * P2010). A wait is cancelled with `pg_cancel_backend` through `root`, a client that runs it on
 * another pooled connection (the transaction's own connection is busy waiting).
 */
export function prismaExecutor(db: PrismaRawQueryable, root?: PrismaRawQueryable): LockExecutor {
  const query: LockExecutor['query'] = async (statement) =>
    (await db.$queryRawUnsafe(statement.text, ...statement.values)) as Record<string, unknown>[];
  if (root === undefined) return { query };
  return {
    query,
    cancelNeedsPid: true,
    async cancel(pid) {
      if (pid === undefined || !Number.isInteger(pid)) return;
      await root.$queryRawUnsafe('SELECT pg_cancel_backend($1::text::int) AS cancelled', String(pid));
    },
  };
}
