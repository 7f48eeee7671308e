// The worker scenarios of the leader-observers suite: a leader in a process of its own, for an
// observer in the test's process to see. Kept out of worker.ts so that it only dispatches to them.
import { type BigintLockKey, type LeaderCampaign, lockKey } from '@pglock/core';
import { electStatement } from '@pglock/core/internal';
import pg from 'pg';
import type { AdapterInstance } from './harness.ts';

type Say = (event: Record<string, unknown>) => void;

/** Resolves on SIGTERM: the test's way to ask a worker to step down. */
const terminated = () => new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));

/** Scenario name → what the worker runs. */
export const leaderScenarios: Record<
  string,
  (instance: AdapterInstance, args: Record<string, unknown>, say: Say) => Promise<void>
> = {
  /**
   * Campaigns for `name` with `identity` and says `elected` with the term; on SIGTERM it stops (the
   * lock is released) and says `stopped`. An adapter without session locks (`session: false`, Prisma)
   * leads the way pglock's
   * campaign does, on a `pg.Client` of its own: the session lock, then the election statement on the
   * same connection.
   */
  async leaderCampaign(instance, args, say) {
    const { name, identity, session } = args as { name: string; identity: string; session: boolean };
    const stop = terminated();
    const start = instance.locks.leader;
    if (session && start !== undefined) {
      const campaign: LeaderCampaign = start(name, {
        identity,
        onElected: ({ term }) => say({ event: 'elected', term }),
        onError: (error) => say({ event: 'error', error: String(error) }),
      });
      await stop;
      await campaign.stop();
      say({ event: 'stopped' });
      return;
    }
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    client.on('error', () => undefined);
    await client.connect();
    const key = lockKey(name) as BigintLockKey;
    await client.query('SELECT pg_advisory_lock($1::text::bigint)', [String(key.value)]);
    const election = electStatement(key, identity);
    const { rows } = await client.query(election.text, [...election.values]);
    say({ event: 'elected', term: Number(rows[0]?.term) });
    await stop;
    await client.end();
    say({ event: 'stopped' });
  },
  /**
   * Campaigns for every name of `names` with `identity` (a fleet of jobs in one process); says
   * `campaigning` once all started (`at`: when the first started), then `elected` per term (`name`, `term`, `at`: `Date.now()`),
   * and `error` for what onError gets. Runs until killed.
   */
  async campaigns(instance, args, say) {
    const { names, identity } = args as { names: string[]; identity: string };
    const start = instance.locks.leader;
    if (start === undefined) throw new Error('the adapter has no leader');
    const at = Date.now();
    for (const name of names) {
      start(name, {
        identity,
        onElected: ({ term }) => say({ event: 'elected', name, term, at: Date.now() }),
        onError: (error) => say({ event: 'error', error: String(error) }),
      });
    }
    say({ event: 'campaigning', at });
    await new Promise(() => undefined);
  },
};
