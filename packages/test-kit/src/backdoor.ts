import type { LockKey } from '@pglock/core';
import { lockTag } from '@pglock/core/internal';
import pg from 'pg';

/** A bigint key (as `lockKey(name).value` gives it) or a {@link LockKey} of either form. */
export type BackdoorKey = bigint | LockKey;

function tagOf(key: BackdoorKey): { classid: number; objid: number; objsubid: 1 | 2 } {
  if (typeof key !== 'bigint') return lockTag(key);
  const unsigned = BigInt.asUintN(64, key);
  return { classid: Number(unsigned >> 32n), objid: Number(unsigned & 0xffffffffn), objsubid: 1 };
}

/**
 * A raw node-postgres connection beside the adapter under test: it checks effects in `pg_locks`
 * and sets up tables, never through the adapter.
 */
export class Backdoor {
  readonly #client: pg.Client;

  private constructor(client: pg.Client) {
    this.#client = client;
  }

  static async open(url: string): Promise<Backdoor> {
    const client = new pg.Client({ connectionString: url, application_name: 'pglock-test-backdoor' });
    await client.connect();
    return new Backdoor(client);
  }

  async query<Row extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values: readonly unknown[] = [],
  ): Promise<Row[]> {
    return (await this.#client.query<Row>(text, [...values])).rows;
  }

  /** Advisory locks on `key` (holders first, then waiters in arrival order), as `pg_locks` lists them. */
  async locksOn(key: BackdoorKey): Promise<{ pid: number; granted: boolean; mode: string }[]> {
    const { classid, objid, objsubid } = tagOf(key);
    return this.query(
      `SELECT pid, granted, mode FROM pg_locks WHERE locktype = 'advisory' AND objsubid = $3::int
         AND classid = $1::bigint::oid AND objid = $2::bigint::oid
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY granted DESC, waitstart`,
      [String(classid), String(objid), objsubid],
    );
  }

  /** Backend pids that wait for `key` (not granted), in arrival order. */
  async waitersOn(key: BackdoorKey): Promise<number[]> {
    return (await this.locksOn(key)).filter((l) => !l.granted).map((l) => l.pid);
  }

  /** Terminates backend `pid` (`pg_terminate_backend`), and waits until it is gone. */
  async terminate(pid: number): Promise<void> {
    await this.query('SELECT pg_terminate_backend($1::int)', [pid]);
    await this.waitFor(
      `backend ${pid} to exit`,
      async () =>
        (await this.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1::int', [pid])).length === 0,
    );
  }

  /** Polls until `check` returns a truthy value (every 10 ms, at most `timeoutMs`), and returns it. */
  async waitFor<T>(what: string, check: () => Promise<T>, timeoutMs = 10_000): Promise<NonNullable<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value as NonNullable<T>;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /**
   * Waits until `count` sessions wait for `key` (not granted). A readiness wait, not a timing
   * assertion: worker processes that load an ORM (Prisma's client) at load 10 took over 10 s to
   * reach their first wait, so it allows 30 s by default.
   */
  waitForWaiters(key: BackdoorKey, count: number, timeoutMs = 30_000): Promise<true> {
    return this.waitFor(
      `${count} waiter(s) on ${key}`,
      async () => {
        const locks = await this.locksOn(key);
        return locks.filter((l) => !l.granted).length >= count || undefined;
      },
      timeoutMs,
    ) as Promise<true>;
  }

  async close(): Promise<void> {
    await this.#client.end();
  }
}
