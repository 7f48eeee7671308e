import type { Statement } from '@pglock/core/adapter';
import { lockRequest, lockStatements, sessionUnlockStatements } from '@pglock/core/internal';
import { Backdoor } from '@pglock/test-kit';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';

// Session advisory locks are reentrant per connection and per mode: PostgreSQL counts them, and
// each unlock undoes one lock. The model is that count; `pg_locks` must show a row exactly when it is
// > 0, and core's guarded unlock (what a session lock's release sends) must release one count when
// the connection holds the lock and touch nothing (no row) when it does not.
type Executor = (statement: Statement) => Promise<Record<string, unknown>[]>;
const url = inject('databaseUrl');
let backdoor: Backdoor;
let client: pg.Client;
let executor: Executor;
let pid: number;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
  client = new pg.Client(url);
  await client.connect();
  executor = async (s) => (await client.query(s.text, [...s.values])).rows;
  pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
});
afterAll(async () => {
  await client.end();
  await backdoor.close();
});

type Model = Map<string, number>;
const names = [`model:a:${Math.random()}`, `model:b:${Math.random()}`];
const slot = (name: string, shared: boolean) => `${name}|${shared}`;

class Lock implements fc.AsyncCommand<Model, Executor> {
  constructor(
    readonly name: string,
    readonly shared: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Executor): Promise<void> {
    const [attempt] = lockStatements(lockRequest(this.name).keys, 'session', this.shared, 'try');
    expect((await real(attempt as Statement)).map((row) => row.ok)).toEqual([true]);
    model.set(slot(this.name, this.shared), (model.get(slot(this.name, this.shared)) ?? 0) + 1);
    await expectMatches(model);
  }
  toString = () => `lock(${this.name.slice(6, 7)}, ${this.shared ? 'shared' : 'exclusive'})`;
}

class Unlock implements fc.AsyncCommand<Model, Executor> {
  constructor(
    readonly name: string,
    readonly shared: boolean,
  ) {}
  check = () => true;
  async run(model: Model, real: Executor): Promise<void> {
    const held = model.get(slot(this.name, this.shared)) ?? 0;
    const [unlock] = sessionUnlockStatements(lockRequest(this.name).keys, this.shared);
    const rows = await real(unlock as Statement);
    if (held === 0) expect(rows).toEqual([]);
    else {
      expect(rows.map((row) => row.ok)).toEqual([true]);
      model.set(slot(this.name, this.shared), held - 1);
    }
    await expectMatches(model);
  }
  toString = () => `unlock(${this.name.slice(6, 7)}, ${this.shared ? 'shared' : 'exclusive'})`;
}

async function expectMatches(model: Model): Promise<void> {
  const rows = await backdoor.query<{ classid: string; objid: string; mode: string }>(
    `SELECT classid::text, objid::text, mode FROM pg_locks WHERE locktype = 'advisory' AND pid = $1`,
    [pid],
  );
  const actual = rows.map((r) => `${r.classid}:${r.objid}:${r.mode}`).sort();
  const expected = [...model]
    .filter(([, n]) => n > 0)
    .map(([key]) => {
      const [name, shared] = key.split('|') as [string, string];
      const value = BigInt.asUintN(64, (lockRequest(name).keys[0] as { value: bigint }).value);
      return `${value >> 32n}:${value & 0xffffffffn}:${shared === 'true' ? 'ShareLock' : 'ExclusiveLock'}`;
    })
    .sort();
  expect(actual).toEqual(expected);
}

it('session-lock reentrancy matches a counting model (pg_locks checked after every step)', async () => {
  const commands = names.flatMap((name) =>
    [false, true].flatMap((shared) => [
      fc.constant(new Lock(name, shared)),
      fc.constant(new Unlock(name, shared)),
    ]),
  );
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 25 }), async (cmds) => {
      await client.query('SELECT pg_advisory_unlock_all()');
      await fc.asyncModelRun(() => ({ model: new Map(), real: executor }), cmds);
    }),
    { numRuns: 30 },
  );
  await client.query('SELECT pg_advisory_unlock_all()');
});
