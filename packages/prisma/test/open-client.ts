import { countingPool } from '@pglock/test-kit';
import { PrismaPg } from '@prisma/adapter-pg';
import { advisoryLocks } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

/** A generated PrismaClient on a counting `pg.Pool` (through `@prisma/adapter-pg`), extended with pglock. */
export function openClient(url: string, max = 4) {
  const { pool, count } = countingPool({ connectionString: url, max });
  const base = new PrismaClient({ adapter: new PrismaPg(pool) });
  const prisma = base.$extends(advisoryLocks());
  return {
    base,
    prisma,
    pool,
    count,
    async close(): Promise<void> {
      await base.$disconnect();
      await pool.end().catch(() => undefined);
    },
  };
}

/** The extended client's type, for tests. */
export type TestClient = ReturnType<typeof openClient>['prisma'];
