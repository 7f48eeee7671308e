import { randomUUID } from 'node:crypto';
import { lockKey } from '@pglock/core';
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { LeakScan, startPoolerLane } from '../src/pooler-lane.ts';
import { sleep } from './measure.ts';

const pgbouncer = inject('pgbouncer');
const missing = 'missing' in pgbouncer ? pgbouncer.missing : undefined;

// The chaos run's leak check, shown to catch what it looks for: a session lock taken through a
// transaction-mode pooler stays on the server connection after the client has gone.
it.skipIf(missing)(
  `the leak scan finds a session lock left on a pooler backend${missing ? ` (skipped: ${missing})` : ''}`,
  async () => {
    const lane = await startPoolerLane(inject('databaseUrl'));
    if (typeof lane === 'string') throw new Error(lane);
    const db = new pg.Client(inject('databaseUrl'));
    await db.connect();
    try {
      const name = `leak:${randomUUID()}`;
      const client = new pg.Client(lane.url);
      await client.connect();
      await client.query('SELECT pg_advisory_lock($1::text::bigint)', [
        String((lockKey(name) as { value: bigint }).value),
      ]);
      await client.end();
      const leaks = new LeakScan();
      const pids = await lane.serverPids();
      expect(pids.length).toBeGreaterThan(0);
      await leaks.scan(db, pids);
      expect(leaks.found()).toEqual([]);
      expect(leaks.suspectPids()).toHaveLength(1);
      await sleep(1_600);
      await leaks.scan(db, pids);
      expect(leaks.found()).toEqual([expect.stringMatching(/sat idle holding .*a session lock left behind/)]);
    } finally {
      await lane.stop();
      await db.end();
    }
  },
);
