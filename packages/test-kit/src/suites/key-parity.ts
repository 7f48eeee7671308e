import { createHash } from 'node:crypto';
import { type LockKeyInput, lockKey } from '@pglock/core';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { firstReason, holdLock, missing, type SuiteContext, skipped } from '../context.ts';

/**
 * Key parity (issue 13 item 4): the same name and namespace lock the same `pg_locks` key whatever
 * the verb, and the key is `lockKey(…)` of `@pglock/core`, so every adapter agrees with every other.
 * And (issue 28 item 7, docs/migrating.md) hand-written advisory-lock SQL and pglock given the same
 * numeric id or pair exclude each other, so old and new code can run side by side in a rolling deploy.
 */
export function keyParitySuite(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noContention = missing(
    capabilities,
    'contention',
    'one connection only: no second session to look from',
  );
  const noSession = firstReason(
    missing(capabilities, 'session', 'the adapter offers no session locks'),
    ctx.viaPooler ? 'session locks are refused through a transaction-mode pooler' : undefined,
  );

  describe.skipIf(noContention)(`key parity${skipped(noContention)}`, () => {
    const inputs = (): [string, LockKeyInput, { namespace?: string }][] => {
      const namespace = `parity-${Math.random().toString(36).slice(2, 10)}`;
      return [
        ['a name', ctx.name('parity').name, {}],
        ['a name in a namespace', ctx.name('parity-ns').name, { namespace }],
        [
          'a bigint (a namespace is ignored)',
          BigInt.asIntN(64, ctx.name('parity-bigint').key),
          { namespace },
        ],
        ['a pair', { pair: [Math.floor(Math.random() * 2 ** 31), -7] }, {}],
      ];
    };

    it('withLock, lock(tx), isLocked and inspectLocks agree on the key of each input', async () => {
      const instance = await ctx.open();
      const observer = await ctx.open();
      for (const [label, input, options] of inputs()) {
        const expected = lockKey(input, options);
        // The factory's default namespace and a per-call one give the same key.
        const byDefault = observer.advisoryLocks(options);
        const held = await holdLock(instance, input, options);
        try {
          expect(await ctx.backdoor.locksOn(expected), label).toEqual([
            { pid: held.pid, granted: true, mode: 'ExclusiveLock' },
          ]);
          expect(await observer.isLocked(input, options), label).toBe(true);
          expect(await observer.advisoryLocks(options).isLocked(input), label).toBe(true);
          expect(await byDefault.tryWithLock(input, async () => 'ran'), label).toEqual({ acquired: false });
          const listed = (await observer.inspectLocks()).filter((l) => l.pid === held.pid);
          expect(
            listed.map((l) => l.key),
            label,
          ).toContainEqual(expected.form === 'pair' ? expected : { form: 'bigint', value: expected.value });
        } finally {
          await held.release();
        }
        const inTx = await observer.transaction(async (tx) => {
          await tx.lock(input, options);
          return ctx.backdoor.locksOn(expected);
        });
        expect(inTx, label).toHaveLength(1);
      }
    });

    it('hand-written advisory-lock SQL and pglock exclude each other on a numeric id and on a pair', async () => {
      const instance = await ctx.open();
      // The old code: a raw connection of its own, straight to the server, as hand-written code has.
      const legacy = new pg.Client({
        connectionString: inject('databaseUrl'),
        application_name: 'pglock-test-legacy',
      });
      await legacy.connect();
      try {
        const id = Number(BigInt.asUintN(31, ctx.name('legacy-int').key));
        const md5Name = ctx.name('legacy-md5').name;
        const pairClass = Number(BigInt.asUintN(31, ctx.name('legacy-pair').key));
        // The forms of docs/migrating.md, each with the old SQL's arguments and pglock's key for them.
        const cases: [string, LockKeyInput, string, unknown[]][] = [
          // `hash(name) & 0x7FFFFFFF` style: a 31-bit id, written into the SQL as a literal.
          ['pg_advisory_xact_lock(12345)', id, `${id}`, []],
          // An int8 the old SQL computed from md5(name); pglock gets the same number from JS.
          [
            "pg_advisory_xact_lock(('x' || substr(md5(name), 1, 16))::bit(64)::bigint)",
            BigInt.asIntN(64, BigInt(`0x${createHash('md5').update(md5Name).digest('hex').slice(0, 16)}`)),
            "('x' || substr(md5($1), 1, 16))::bit(64)::bigint",
            [md5Name],
          ],
          ['pg_advisory_xact_lock(1, 42)', { pair: [pairClass, 42] }, `${pairClass}, 42`, []],
        ];
        for (const [label, input, args, values] of cases) {
          await legacy.query('BEGIN');
          await legacy.query(`SELECT pg_advisory_xact_lock(${args})`, values);
          try {
            expect(await instance.tryWithLock(input, async () => 'ran'), `${label} held`).toEqual({
              acquired: false,
            });
          } finally {
            await legacy.query('COMMIT');
          }
          const held = await holdLock(instance, input);
          try {
            const { rows } = await legacy.query(`SELECT pg_try_advisory_xact_lock(${args}) AS got`, values);
            expect(rows[0]?.got, `${label} against pglock`).toBe(false);
            const session = await legacy.query(`SELECT pg_try_advisory_lock(${args}) AS got`, values);
            expect(session.rows[0]?.got, `session ${label} against pglock`).toBe(false);
          } finally {
            await held.release();
          }
          expect(await instance.tryWithLock(input, async () => 'ran'), `${label} free`).toEqual({
            acquired: true,
            value: 'ran',
          });
        }
      } finally {
        await legacy.end();
      }
    });

    it.skipIf(noSession)(`session locks take the same key as withLock${skipped(noSession)}`, async () => {
      const instance = await ctx.open();
      const other = await ctx.open();
      for (const [label, input, options] of inputs()) {
        const expected = lockKey(input, options);
        const handle = await instance.acquireSessionLock(input, options);
        try {
          expect(handle.key, label).toEqual(expected);
          expect(await ctx.backdoor.locksOn(expected), label).toEqual([
            { pid: handle.pid, granted: true, mode: 'ExclusiveLock' },
          ]);
          expect(await other.tryWithLock(input, async () => 'ran', options), label).toEqual({
            acquired: false,
          });
          expect(await other.advisoryLocks(options).tryWithLock(input, async () => 'ran'), label).toEqual({
            acquired: false,
          });
          expect(await other.isLocked(input, options), label).toBe(true);
        } finally {
          await handle.release();
        }
      }
    });
  });
}
