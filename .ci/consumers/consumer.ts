// A CommonJS-style TypeScript consumer (no "type": "module": this file compiles to require()),
// typechecked with module node16 (with a `source` custom condition, as monorepos set: pglock's
// published exports have none) and with module commonjs (node10 resolution). Uses the stable names
// only; the point is that the require() types (.d.cts) resolve and agree with the runtime. With
// skipLibCheck, as app templates set it (drizzle-orm's own declarations do not pass without).

import { main } from '@pglock/cli';
import { type LockNotAcquiredError as CoreNotAcquired, lockKey } from '@pglock/core';
import type { LockPort } from '@pglock/core/adapter';
import { advisoryLocks as drizzleLocks } from '@pglock/drizzle';
import { advisoryLocks as kyselyLocks } from '@pglock/kysely';
import { instrumentPglock } from '@pglock/otel';
import { advisoryLocks, LockNotAcquiredError, withLock } from '@pglock/pg';
import { advisoryLocks as prismaLocks } from '@pglock/prisma';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, PostgresDialect } from 'kysely';

import pg = require('pg');

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });

export async function nightly(): Promise<number> {
  const rows: number = await withLock(pool, 'nightly', async (client) => {
    const result = await client.query('SELECT 1 AS one');
    return result.rowCount ?? 0;
  });
  return rows;
}

export async function busy(): Promise<boolean> {
  const locks = advisoryLocks(pool, { namespace: 'consumer' });
  try {
    await locks.withLock(lockKey('report'), async () => undefined, { timeoutMs: 0 });
    return false;
  } catch (error) {
    // The adapter re-exports core's class: one class, whichever entry it came from.
    const same: typeof CoreNotAcquired = LockNotAcquiredError;
    return same.is(error);
  }
}

export function ormLocks(): Promise<string[]> {
  const db = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool }) });
  return Promise.all([
    drizzleLocks(drizzle({ client: pool })).withLock('drizzle', async () => 'drizzle'),
    kyselyLocks(db).withLock('kysely', async () => 'kysely'),
  ]);
}

export const factories = [prismaLocks, instrumentPglock, main] as const;
export type Port = LockPort<unknown, unknown>;
