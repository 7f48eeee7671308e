import pg from 'pg';

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

  /** Advisory locks on `key` (a bigint as text), as `pg_locks` lists them. */
  async locksOn(key: bigint): Promise<{ pid: number; granted: boolean; mode: string }[]> {
    const unsigned = BigInt.asUintN(64, key);
    return this.query(
      `SELECT pid, granted, mode FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1
         AND classid = $1::bigint::oid AND objid = $2::bigint::oid
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY granted DESC, waitstart`,
      [String(unsigned >> 32n), String(unsigned & 0xffffffffn)],
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

  /** Waits until `count` sessions wait for `key` (not granted). */
  waitForWaiters(key: bigint, count: number): Promise<true> {
    return this.waitFor(`${count} waiter(s) on ${key}`, async () => {
      const locks = await this.locksOn(key);
      return locks.filter((l) => !l.granted).length >= count || undefined;
    }) as Promise<true>;
  }

  async close(): Promise<void> {
    await this.#client.end();
  }
}
