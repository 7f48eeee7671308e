import type { AdapterHarness, AdapterInstance, Sql } from '@pglock/test-kit';
import { inspectLocks, isLocked, lock, type PrismaRawQueryable, tryLock } from '../src/index.ts';
import { openClient } from './open-client.ts';

// Prisma's raw queries cannot return a `void` column (P2010, "Failed to deserialize column of type
// 'void'"), which `SELECT pg_sleep(…)` has. The statement did run and the transaction stays usable
// (the failure is in the client, decoding the result), so the harness reports no rows for it.
const sqlOf =
  (db: PrismaRawQueryable): Sql =>
  async (text, values = []) =>
    (await db.$queryRawUnsafe(text, ...values)) as Record<string, unknown>[];

/** The conformance harness for `@pglock/prisma`: the extension on a generated client over `@prisma/adapter-pg`. */
export const prismaHarness: AdapterHarness = {
  name: 'prisma (adapter-pg)',
  capabilities: { contention: true, multiProcess: true, abort: true, countsStatements: true },
  moduleUrl: import.meta.url,
  exportName: 'prismaHarness',
  async open(url): Promise<AdapterInstance> {
    const { prisma, count, close } = openClient(url);
    return {
      withLock: (target, fn, options) => prisma.$withLock(target, (tx) => fn(sqlOf(tx)), options),
      tryWithLock: (target, fn, options) => prisma.$tryWithLock(target, (tx) => fn(sqlOf(tx)), options),
      transaction: (fn) =>
        prisma.$transaction((tx) =>
          fn({
            sql: sqlOf(tx),
            lock: (target, options) => lock(tx, target, options),
            tryLock: (target, options) => tryLock(tx, target, options),
          }),
        ),
      isLocked: (key, options) => isLocked(prisma, key, options),
      inspectLocks: () => inspectLocks(prisma),
      statementCount: count,
      close,
    };
  },
};
