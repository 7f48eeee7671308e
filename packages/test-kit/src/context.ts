import { randomUUID } from 'node:crypto';
import { lockKey } from '@pglock/core';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { Backdoor } from './backdoor.ts';
import type { AdapterHarness, AdapterInstance, Capabilities, OpenOptions } from './harness.ts';
import type {} from './provided-context.ts';

/** What every suite gets: the harness, a backdoor connection, and instances closed after each test. */
export interface SuiteContext {
  readonly harness: AdapterHarness;
  /** The URL the adapter connects to (the database, or a pooler in front of it). */
  readonly url: string;
  /** True when the adapter connects through a pooler, whose server connections sessions share. */
  readonly viaPooler: boolean;
  readonly backdoor: Backdoor;
  /** Opens an adapter instance that is closed after the test. */
  open(options?: OpenOptions): Promise<AdapterInstance>;
  /** A lock name no other test uses, and its bigint key for `pg_locks` checks. */
  name(label: string): { name: string; key: bigint };
  /** A fresh table name prefix (tables are dropped after the suite). */
  table(): string;
}

/** Registers the hooks behind a {@link SuiteContext}; call inside a `describe`. */
export function useSuiteContext(harness: AdapterHarness, adapterUrl?: string): SuiteContext {
  const directUrl = inject('databaseUrl');
  const url = adapterUrl ?? directUrl;
  let backdoor: Backdoor | undefined;
  const opened: AdapterInstance[] = [];
  const tables: string[] = [];
  beforeAll(async () => {
    backdoor = await Backdoor.open(directUrl);
  });
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((instance) => instance.close()));
  });
  afterAll(async () => {
    for (const table of tables) {
      await backdoor?.query(`DROP TABLE IF EXISTS ${table}_counter, ${table}_intervals, ${table}_rows`);
    }
    await backdoor?.close();
  });
  return {
    harness,
    url,
    viaPooler: url !== directUrl,
    get backdoor() {
      if (!backdoor) throw new Error('backdoor used outside a test');
      return backdoor;
    },
    async open(options) {
      const instance = await harness.open(url, options);
      opened.push(instance);
      return instance;
    },
    name(label) {
      const name = `conformance:${harness.name}:${label}:${randomUUID()}`;
      return { name, key: (lockKey(name) as { value: bigint }).value };
    },
    table() {
      const table = `pglock_t_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      tables.push(table);
      return table;
    },
  };
}

/** The reason a capability-gated suite is skipped, or undefined when it runs. */
export function missing(
  capabilities: Capabilities,
  needed: keyof Capabilities,
  why: string,
): string | undefined {
  return capabilities[needed] ? undefined : why;
}

/** A promise plus its resolve, to hold a lock open until the test says so. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A lock held by `instance` inside its `withLock` until `release()`; `pid` is the holder's backend. */
export interface HeldLock {
  readonly pid: number;
  release(): Promise<void>;
}

/** Takes `target` with `instance.withLock` and keeps the callback open until `release()`. */
export async function holdLock(
  instance: AdapterInstance,
  target: Parameters<AdapterInstance['withLock']>[0],
  options?: Parameters<AdapterInstance['withLock']>[2],
): Promise<HeldLock> {
  const entered = deferred<number>();
  const leave = deferred();
  const done = instance.withLock(
    target,
    async (sql) => {
      const [row] = await sql('SELECT pg_backend_pid() AS pid');
      entered.resolve(Number(row?.pid));
      await leave.promise;
    },
    options,
  );
  const pid = await Promise.race([entered.promise, done.then(() => Number.NaN)]);
  return {
    pid,
    async release() {
      leave.resolve();
      await done;
    },
  };
}

/** Backend pid of the connection behind `sql`. */
export async function pidOf(sql: (text: string) => Promise<Record<string, unknown>[]>): Promise<number> {
  const [row] = await sql('SELECT pg_backend_pid() AS pid');
  return Number(row?.pid);
}
