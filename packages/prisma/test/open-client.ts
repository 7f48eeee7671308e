import { countingPool } from '@pglock/test-kit';
import { PrismaPg } from '@prisma/adapter-pg';
import { advisoryLocks, type PrismaLocksOptions } from '../src/index.ts';
import { PrismaClient } from './generated/client.ts';

/** How a test client is made. */
export interface OpenClientOptions {
  readonly max?: number | undefined;
  /** Listen for `'error'` on the pool and its clients, as apps should (default true). */
  readonly errorListeners?: boolean | undefined;
  /** The extension's defaults. */
  readonly defaults?: PrismaLocksOptions | undefined;
  /** `new PrismaClient({ transactionOptions })`. */
  readonly transactionOptions?:
    | { timeout?: number; maxWait?: number; isolationLevel?: 'Serializable' }
    | undefined;
}

/** A generated PrismaClient on a counting `pg.Pool` (through `@prisma/adapter-pg`), extended with pglock. */
export function openClient(url: string, options: OpenClientOptions = {}) {
  const { max = 4, errorListeners, defaults, transactionOptions } = options;
  const { pool, count } = countingPool({ connectionString: url, max }, { errorListeners });
  const base = new PrismaClient({
    adapter: new PrismaPg(pool),
    ...(transactionOptions ? { transactionOptions } : {}),
  });
  const prisma = base.$extends(advisoryLocks(defaults));
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
