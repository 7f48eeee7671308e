import { hostname } from 'node:os';
import {
  InvalidLockOptionsError,
  JOBS_TABLE_DDL,
  JOBS_TABLE_UPGRADE_DDL,
  type LeaderCampaign,
  type LeaderObserver,
  type LeaderOptions,
  LockTableMissingError,
} from '@pglock/core';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Child, processTestTimeout } from '../child.ts';
import {
  deferred,
  firstReason,
  holdLock,
  missing,
  type SuiteContext,
  settlesWithin,
  skipped,
  sleep,
} from '../context.ts';
import type { AdapterInstance } from '../harness.ts';
import { emptyDatabaseUrl, legacyDatabaseUrl, setUpDatabases } from './scheduling.ts';

function leaderOf(instance: AdapterInstance): (name: string, options: LeaderOptions) => LeaderCampaign {
  const start = instance.locks.leader;
  if (start === undefined) throw new Error('the adapter has no leader');
  return start;
}

/** The granted holder's backend pid of `key`, from the backdoor. */
async function holderOf(ctx: SuiteContext, key: bigint): Promise<number | undefined> {
  return (await ctx.backdoor.locksOn(key)).find((lock) => lock.granted)?.pid;
}

/** What the observer reported, in order: the term, or `null` for "nobody leads". */
type Seen = (number | null)[];

/**
 * Issue 24 items 2 and 3: `leader(…, { identity })` stores who leads with the term; `currentLeader`
 * reads the leader without campaigning (one statement: also through a transaction-mode pooler);
 * `observeLeader` reports every change; `campaign.resign()` hands over to a standby and stays a
 * candidate. Leaders run in processes of their own where the suite reads them from outside.
 */
export function leaderObserversSuite(ctx: SuiteContext): void {
  describe('leader observers', () => leaderObserverTests(ctx));
}

function leaderObserverTests(ctx: SuiteContext): void {
  const { capabilities } = ctx.harness;
  const noBackdoor = missing(
    capabilities,
    'contention',
    'an in-process database of its own: the backdoor cannot see its tables and locks',
  );
  const noProcesses = firstReason(noBackdoor, ctx.noProcesses);
  const noSession = firstReason(
    missing(capabilities, 'session', 'the adapter cannot pin a connection for a session lock'),
    ctx.viaPooler
      ? 'a campaign needs a session lock, which a transaction-mode pooler refuses (the scheduling suite checks the refusal)'
      : undefined,
  );
  const noTwoSessions = firstReason(noSession, noBackdoor);
  /** An instance; on an in-process database of its own (PGlite), with `pglock_jobs` created there. */
  const openWithTable = async (): Promise<AdapterInstance> => {
    const instance = await ctx.open();
    if (noBackdoor !== undefined) await instance.transaction((tx) => tx.sql(JOBS_TABLE_DDL));
    return instance;
  };
  // A leader in another process always connects to the database itself: it needs a session lock.
  const leaderUrl = () => inject('databaseUrl');
  const startLeader = (name: string, identity: string) =>
    new Child(ctx.harness, leaderUrl(), 'leaderCampaign', {
      name,
      identity,
      session: capabilities.session,
    });

  beforeAll(() => setUpDatabases(ctx.backdoor));

  describe(`identity${skipped(noTwoSessions)}`, () => {
    it.skipIf(noTwoSessions)(
      'leader stores its identity with each term (default host:pid); currentLeader reads it with the holder',
      async () => {
        const instance = await ctx.open();
        const { name, key } = ctx.name('identity');
        const identity = `https://worker-3.internal:8443/${'x'.repeat(200)}`;
        const elected = deferred<number>();
        const campaign = leaderOf(instance)(name, {
          identity,
          onElected: ({ term }) => elected.resolve(term),
        });
        let term: number;
        try {
          expect(campaign.identity).toBe(identity);
          term = await settlesWithin(elected.promise, 10_000, 'the election');
          const [row] = await ctx.backdoor.query<{ term: number; identity: string | null }>(
            'SELECT term::int, identity FROM pglock_jobs WHERE key = $1::bigint',
            [String(key)],
          );
          expect(row).toEqual({ term, identity });
          const now = await instance.locks.currentLeader(name);
          expect(now).toMatchObject({ term, identity, pid: await holderOf(ctx, key) });
          expect(now?.since).toBeInstanceOf(Date);
          const [server] = await ctx.backdoor.query<{ at: Date }>(
            'SELECT elected_at AS at FROM pglock_jobs WHERE key = $1::bigint',
            [String(key)],
          );
          expect(now?.since.getTime()).toBe(Math.floor(server!.at.getTime()));
          expect(['string', 'undefined']).toContain(typeof now?.application);
        } finally {
          await campaign.stop();
        }
        // The next campaign without identity: host:pid, in the same statement as its term.
        const again = deferred<number>();
        const plain = leaderOf(instance)(name, { onElected: ({ term: next }) => again.resolve(next) });
        try {
          const next = await settlesWithin(again.promise, 10_000, 'the second election');
          expect(next).toBeGreaterThan(term);
          const defaultIdentity = `${hostname()}:${process.pid}`;
          expect(plain.identity).toBe(defaultIdentity);
          expect(await instance.locks.currentLeader(name)).toMatchObject({
            term: next,
            identity: defaultIdentity,
          });
        } finally {
          await plain.stop();
        }
        expect(await instance.locks.currentLeader(name)).toBeUndefined();
      },
    );

    it.skipIf(noTwoSessions)(
      'on a table from before identity it leads without one, and says once (LockTableMissingError naming the column, with the upgrade)',
      async () => {
        const legacy = await ctx.open({ url: legacyDatabaseUrl(ctx.url) });
        const { name } = ctx.name('identity-legacy');
        const errors: unknown[] = [];
        const terms: number[] = [];
        const campaign = leaderOf(legacy)(name, {
          identity: 'legacy',
          retryMs: 20,
          onElected: ({ term }) => {
            terms.push(term);
            if (terms.length < 3) throw new Error('resign');
          },
          onError: (error) => errors.push(error),
        });
        try {
          await ctx.backdoor.waitFor('a third term', async () => terms.length === 3 && campaign.isLeader);
          expect(await legacy.locks.currentLeader(name)).toMatchObject({
            term: terms[2],
            identity: undefined,
          });
        } finally {
          await campaign.stop();
        }
        const missingColumn = errors.filter((error) => LockTableMissingError.is(error));
        expect(missingColumn).toHaveLength(1);
        expect(missingColumn[0]).toMatchObject({ column: 'identity', ddl: JOBS_TABLE_UPGRADE_DDL });
        expect(errors.filter((error) => !LockTableMissingError.is(error)).map(String)).toEqual([
          'Error: resign',
          'Error: resign',
        ]);
      },
    );

    it.skipIf(noSession)(
      'a bad identity throws InvalidLockOptionsError from the call, before any SQL',
      async () => {
        const instance = await ctx.open();
        await instance.isLocked(ctx.name('warm').name);
        const before = instance.statementCount();
        const { name, key } = ctx.name('identity-bad');
        for (const identity of ['', 'x'.repeat(257), 42, 'a\u0000b', null]) {
          let thrown: unknown;
          try {
            const campaign = leaderOf(instance)(name, {
              identity: identity as string,
              onElected: () => undefined,
            });
            await campaign.stop();
          } catch (error) {
            thrown = error;
          }
          expect(InvalidLockOptionsError.is(thrown), `${JSON.stringify(identity)}: ${String(thrown)}`).toBe(
            true,
          );
          expect((thrown as Error).message).toMatch(/identity must be a string of 1 to 256 characters/);
        }
        if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
        if (noBackdoor === undefined) expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      },
    );
  });

  describe('currentLeader', () => {
    it(`undefined for a name nobody leads: never campaigned${noBackdoor ? '' : ', or its lock held by a plain withLock'}`, async () => {
      const instance = await openWithTable();
      const { name } = ctx.name('current-none');
      expect(await instance.locks.currentLeader(name)).toBeUndefined();
      if (noBackdoor !== undefined) return;
      const other = await ctx.open();
      const held = await holdLock(other, name);
      try {
        expect(await instance.locks.currentLeader(name)).toBeUndefined();
      } finally {
        await held.release();
      }
    });

    it.skipIf(noBackdoor)(
      `a missing table is LockTableMissingError (a rejection, never a raw 42P01)${skipped(noBackdoor)}`,
      async () => {
        const empty = await ctx.open({ url: emptyDatabaseUrl(ctx.url) });
        const result = await empty.locks
          .currentLeader(ctx.name('current-missing').name)
          .catch((e: unknown) => e);
        expect(LockTableMissingError.is(result), String(result)).toBe(true);
      },
    );

    describe.skipIf(noProcesses)(
      `a leader in another process${skipped(noProcesses)}`,
      { timeout: processTestTimeout },
      () => {
        it('currentLeader gives its term, identity, since, pid and application; undefined once it stopped, and once it was killed', async () => {
          const instance = await ctx.open();
          const { name, key } = ctx.name('current-process');
          const first = startLeader(name, 'leader-one');
          let elected: Record<string, unknown>;
          try {
            elected = await first.next('elected');
            const now = await instance.locks.currentLeader(name);
            const pid = await holderOf(ctx, key);
            expect(now).toMatchObject({ term: elected.term, identity: 'leader-one', pid });
            const [activity] = await ctx.backdoor.query<{ app: string; at: Date }>(
              `SELECT a.application_name AS app, j.elected_at AS at FROM pg_stat_activity AS a, pglock_jobs AS j
                WHERE a.pid = $1::int AND j.key = $2::bigint`,
              [pid, String(key)],
            );
            expect(now?.application).toBe(activity?.app);
            expect(now?.since.getTime()).toBe(activity?.at.getTime());
            first.kill('SIGTERM');
            await first.next('stopped');
          } finally {
            first.kill('SIGKILL');
          }
          await first.exited;
          expect(await instance.locks.currentLeader(name)).toBeUndefined();

          const second = startLeader(name, 'leader-two');
          try {
            const next = await second.next('elected');
            expect(next.term).toBeGreaterThan(elected.term as number);
            expect(await instance.locks.currentLeader(name)).toMatchObject({
              term: next.term,
              identity: 'leader-two',
            });
            second.kill('SIGKILL');
            // PostgreSQL ends the killed process's session when its socket closes.
            await ctx.backdoor.waitFor(
              'no leader after the SIGKILL',
              async () => (await instance.locks.currentLeader(name)) === undefined,
              await second.budget(5_000),
            );
          } finally {
            second.kill('SIGKILL');
          }
          expect(await ctx.backdoor.locksOn(key)).toEqual([]);
        });

        it('observeLeader reports once at start, then every new term and every loss of the leader; nothing after stop()', async () => {
          const instance = await ctx.open();
          const { name } = ctx.name('observe');
          const seen: Seen = [];
          const previous: (number | null)[] = [];
          const errors: unknown[] = [];
          const observer = instance.locks.observeLeader(name, {
            pollMs: 50,
            onChange: (leader, before) => {
              seen.push(leader?.term ?? null);
              previous.push(before?.term ?? null);
            },
            onError: (error) => errors.push(error),
          });
          const children: Child[] = [];
          try {
            await ctx.backdoor.waitFor('the first reading', async () => seen.length === 1);
            expect(observer.leader).toBeUndefined();
            let last = 0;
            for (const [i, end] of (['SIGTERM', 'SIGKILL'] as const).entries()) {
              const child = startLeader(name, `observed-${i}`);
              children.push(child);
              const { term } = (await child.next('elected')) as { term: number };
              expect(term).toBeGreaterThan(last);
              last = term;
              const budget = await child.budget(5_000);
              await ctx.backdoor.waitFor(`term ${term} seen`, async () => seen.at(-1) === term, budget);
              expect(observer.leader).toMatchObject({ term, identity: `observed-${i}` });
              child.kill(end);
              await ctx.backdoor.waitFor(
                `the end of term ${term} seen`,
                async () => seen.at(-1) === null,
                budget,
              );
              await child.exited;
            }
            expect(seen).toEqual([null, seen[1], null, seen[3], null]);
            expect(previous).toEqual([null, null, seen[1], null, seen[3]]);
            expect(seen[3]).toBeGreaterThan(seen[1] as number);
          } finally {
            for (const child of children) child.kill('SIGKILL');
            await observer.stop();
          }
          const count = seen.length;
          await sleep(200);
          expect(seen).toHaveLength(count);
          expect(errors).toEqual([]);
        });
      },
    );
  });

  describe('observeLeader', () => {
    it(`stop() from inside onChange resolves; signal stops it; await using stops it${noBackdoor ? '' : '; a failed reading goes to onError and it goes on'}`, async () => {
      const instance = await openWithTable();
      const { name } = ctx.name('observe-stop');
      let inner: LeaderObserver | undefined;
      const stoppedInside = deferred<boolean>();
      inner = instance.locks.observeLeader(name, {
        pollMs: 20,
        onChange: async () => {
          await settlesWithin(inner!.stop(), 5_000, 'stop() inside onChange');
          stoppedInside.resolve(true);
        },
      });
      expect(await settlesWithin(stoppedInside.promise, 5_000, 'onChange')).toBe(true);
      await settlesWithin(inner.stop(), 2_000, 'stop() again');

      const controller = new AbortController();
      let calls = 0;
      const bySignal = instance.locks.observeLeader(name, {
        pollMs: 20,
        signal: controller.signal,
        onChange: () => {
          calls++;
        },
      });
      await ctx.backdoor.waitFor('the first reading', async () => calls === 1);
      controller.abort();
      await settlesWithin(bySignal.stop(), 2_000, 'stop() after the abort');

      {
        await using disposed = instance.locks.observeLeader(name, { pollMs: 20, onChange: () => undefined });
        expect(disposed.key).toMatchObject({ name });
      }

      if (noBackdoor === undefined) {
        const empty = await ctx.open({ url: emptyDatabaseUrl(ctx.url) });
        const errors: unknown[] = [];
        let changes = 0;
        const failing = empty.locks.observeLeader(name, {
          pollMs: 20,
          onChange: () => {
            changes++;
          },
          onError: (error) => {
            errors.push(error);
            throw new Error('a throwing onError changes nothing');
          },
        });
        try {
          await ctx.backdoor.waitFor('two failed readings', async () => errors.length >= 2);
        } finally {
          await failing.stop();
        }
        expect(changes).toBe(0);
        expect(errors.every((error) => LockTableMissingError.is(error))).toBe(true);
      }
    });

    it('bad options throw InvalidLockOptionsError from the call (it resolves no promise), before any SQL', async () => {
      const instance = await ctx.open();
      await instance.isLocked(ctx.name('warm').name);
      const before = instance.statementCount();
      const { name } = ctx.name('observe-bad');
      const onChange = () => undefined;
      for (const [options, message] of [
        [undefined, /options must be an object with onChange/],
        [{}, /onChange must be a function/],
        [{ onChange, pollMs: 5 }, /pollMs must be an integer from 10/],
        [{ onChange, signal: {} }, /signal must be an AbortSignal/],
        [{ onChange, pollMS: 100 }, /unknown option `pollMS` \(did you mean `pollMs`\?\)/],
      ] as const) {
        let thrown: unknown;
        try {
          const observer = instance.locks.observeLeader(name, options as never);
          await observer.stop();
        } catch (error) {
          thrown = error;
        }
        expect(InvalidLockOptionsError.is(thrown), `${JSON.stringify(options)}: ${String(thrown)}`).toBe(
          true,
        );
        expect((thrown as Error).message).toMatch(message);
      }
      if (capabilities.countsStatements) expect(instance.statementCount()).toBe(before);
    });
  });

  describe(`resign${skipped(noTwoSessions)}`, () => {
    it.skipIf(noTwoSessions)(
      'resign() ends the term after onElected settled, a waiting standby is elected, and the resigner campaigns again: it leads once the standby stops',
      async () => {
        const { name, key } = ctx.name('resign');
        const [one, two] = [await ctx.open(), await ctx.open()];
        const terms: { who: string; term: number }[] = [];
        let cleanedUp = 0;
        let electedB = 0;
        let reason: unknown;
        const a = leaderOf(one)(name, {
          identity: 'a',
          retryMs: 100,
          onElected: async ({ term, signal }) => {
            terms.push({ who: 'a', term });
            if (terms.length > 1) return;
            await new Promise((resolve) => signal.addEventListener('abort', resolve));
            reason = signal.reason;
            await sleep(150);
            cleanedUp = performance.now();
          },
        });
        await ctx.backdoor.waitFor('a elected', async () => a.isLeader);
        const b = leaderOf(two)(name, {
          identity: 'b',
          onElected: ({ term }) => {
            terms.push({ who: 'b', term });
            electedB = performance.now();
          },
        });
        try {
          await ctx.backdoor.waitForWaiters(key, 1);
          // Not leading: resolves at once, and b goes on waiting.
          await settlesWithin(b.resign(), 1_000, 'resign() of a standby');
          expect((await ctx.backdoor.locksOn(key)).filter((lock) => !lock.granted)).toHaveLength(1);

          await settlesWithin(a.resign(), 5_000, 'resign()');
          expect(cleanedUp).toBeGreaterThan(0);
          expect(reason).toMatchObject({ name: 'AbortError' });
          expect(a.isLeader).toBe(false);
          await ctx.backdoor.waitFor('b elected', async () => b.isLeader);
          expect(electedB).toBeGreaterThanOrEqual(cleanedUp);
          expect(await one.locks.currentLeader(name)).toMatchObject({ term: b.term, identity: 'b' });
          // a stays a candidate: after retryMs it waits for the lock again, and leads once b stops.
          await ctx.backdoor.waitForWaiters(key, 1);
          await b.stop();
          await ctx.backdoor.waitFor('a elected again', async () => a.isLeader);
          expect(terms.map((t) => t.who)).toEqual(['a', 'b', 'a']);
          expect(terms[2]!.term).toBeGreaterThan(terms[1]!.term);
          expect(terms[1]!.term).toBeGreaterThan(terms[0]!.term);
          expect(await two.locks.currentLeader(name)).toMatchObject({ term: a.term, identity: 'a' });
        } finally {
          await Promise.all([a.stop(), b.stop()]);
        }
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      },
    );

    it.skipIf(noTwoSessions)(
      'resign() inside onElected resolves once the lock is released (no deadlock); the standby is elected, the resigner campaigns again',
      async () => {
        const { name, key } = ctx.name('resign-inside');
        const [one, two] = [await ctx.open(), await ctx.open()];
        const standbyWaits = deferred();
        const resigned = deferred<{ aborted: boolean; free: boolean }>();
        let terms = 0;
        let a: LeaderCampaign | undefined;
        a = leaderOf(one)(name, {
          retryMs: 100,
          onElected: async ({ signal }) => {
            terms++;
            if (terms > 1) return;
            await standbyWaits.promise;
            await settlesWithin(a!.resign(), 5_000, 'resign() inside onElected');
            // The lock is released by the time resign() resolves: the standby may hold it already.
            resigned.resolve({ aborted: signal.aborted, free: !a!.isLeader });
          },
        });
        await ctx.backdoor.waitFor('a elected', async () => a!.isLeader);
        let electedB = 0;
        const b = leaderOf(two)(name, {
          onElected: () => {
            electedB++;
          },
        });
        try {
          await ctx.backdoor.waitForWaiters(key, 1);
          standbyWaits.resolve();
          expect(await settlesWithin(resigned.promise, 6_000, 'onElected after resign()')).toEqual({
            aborted: true,
            free: true,
          });
          await ctx.backdoor.waitFor('b elected', async () => b.isLeader);
          expect(electedB).toBe(1);
          await ctx.backdoor.waitForWaiters(key, 1);
          await b.stop();
          await ctx.backdoor.waitFor('a elected again', async () => a.isLeader);
          expect(terms).toBe(2);
        } finally {
          await Promise.all([a.stop(), b.stop()]);
        }
        expect(await ctx.backdoor.locksOn(key)).toEqual([]);
      },
    );
  });
}
