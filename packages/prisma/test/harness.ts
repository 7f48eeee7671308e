import type { AdvisoryLocksOptions } from '@pglock/core';
import { createAdvisoryLocks } from '@pglock/core/adapter';
import * as adapter from '@pglock/prisma';
import { defineHarness, type Sql } from '@pglock/test-kit';
import { advisoryLocks, type PrismaRawQueryable, type TxOf } from '../src/index.ts';
import { watchedPrismaPort } from '../src/prisma-port.ts';
import { openClient, type TestClient } from './open-client.ts';

type Tx = TxOf<TestClient>;

const sqlOf =
  (db: PrismaRawQueryable): Sql =>
  async (text, values = []) =>
    (await db.$queryRawUnsafe(text, ...values)) as Record<string, unknown>[];

/**
 * The kit drives `$withLock`/`$tryWithLock` of the extension, and the other verbs through the same
 * factory the extension builds on (`$lock` refuses a signal, and there is no `$tryLock`).
 */
function locksVia(client: TestClient | Tx, defaults?: AdvisoryLocksOptions) {
  const locks = createAdvisoryLocks(watchedPrismaPort, client as PrismaRawQueryable, defaults);
  return {
    ...locks,
    withLock: ((target, fn, options) =>
      client.$withLock(target, fn as never, options as never)) as typeof locks.withLock,
    tryWithLock: ((target, fn, options) =>
      client.$tryWithLock(target, fn as never, options as never)) as typeof locks.tryWithLock,
  };
}

/**
 * The extension's client methods, read from the extension itself: `Prisma.defineExtension` hands its
 * definition to `client.$extends`, so a stand-in client that returns what it is given shows it.
 */
const extension = advisoryLocks()({ $extends: (definition: unknown) => definition } as never) as unknown as {
  readonly client: Readonly<Record<string, unknown>>;
};

/** The package as apps import it, for the kit's verbs and exports suites. */
const adapterPackage = {
  name: '@pglock/prisma',
  exports: adapter,
  readme: new URL('../README.md', import.meta.url),
  clientMethods: Object.keys(extension.client),
};

/** The conformance harness for `@pglock/prisma`: the extension on a generated client over `@prisma/adapter-pg`. */
export const prismaHarness = defineHarness<Tx>({
  name: 'prisma (adapter-pg)',
  package: adapterPackage,
  capabilities: {
    contention: true,
    multiProcess: true,
    abort: true,
    countsStatements: true,
    session: false,
    transactionSettings: ['isolationLevel', 'maxWait', 'timeout'],
  },
  moduleUrl: import.meta.url,
  exportName: 'prismaHarness',
  async open(url, { max, errorListeners }) {
    const { base, prisma, count, close } = openClient(url, { max, errorListeners });
    return {
      db: prisma,
      advisoryLocks: (defaults) => {
        const client = defaults === undefined ? prisma : base.$extends(advisoryLocks(defaults as never));
        return locksVia(client as TestClient, defaults) as never;
      },
      locksOn: (tx) => locksVia(tx) as never,
      sql: (tx) => sqlOf(tx as PrismaRawQueryable),
      transaction: (fn) => prisma.$transaction((tx) => fn(tx)),
      statementCount: count,
      close,
    };
  },
});
