// Scenario 7, connection economy (issue 26 item 4): for 10, 100 and 1,000 leader campaigns per
// process (@pglock/pg over a pg.Pool), one process leads every name and another stands by for all
// of them. It prints the connections each process has open to the server (from /proc), how long
// the first process took to lead every name, and how long after a SIGKILL of it the other led them
// all; then the same counts of plain session locks held by one process (session-locks-held.ts).
// `pnpm bench:campaigns` (DATABASE_URL, else an embedded PostgreSQL).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { JOBS_TABLE_DDL } from '@pglock/core';
import { tcpConnectionsOf } from '@pglock/test-kit/tcp-connections';
import pg from 'pg';
import { openDatabase } from './database.ts';
import { heldSessionLocks } from './session-locks-held.ts';

const COUNTS = (process.env.PGLOCK_BENCH_CAMPAIGNS?.split(',').map(Number) ?? [
  10, 100, 1_000,
]) as readonly number[];
const worker = fileURLToPath(new URL('./campaigns-worker.ts', import.meta.url));

/** One campaigns process and the elections it reported. */
class Fleet {
  readonly child: ChildProcess;
  readonly elected = new Map<number, number>();
  started = false;
  constructor(url: string, prefix: string, count: number, identity: string) {
    this.child = spawn(
      process.execPath,
      ['--conditions=@pglock/source', '--import', 'tsx', worker, url, prefix, String(count), identity],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as { event: string; i?: number; at?: number; error?: string };
      if (event.event === 'campaigning') this.started = true;
      if (event.event === 'elected') this.elected.set(event.i as number, event.at as number);
      if (event.event === 'error') console.error(`  ${identity}: ${event.error}`);
    });
  }
  get pid(): number {
    return this.child.pid as number;
  }
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const database = await openDatabase();
const port = Number(new URL(database.url).port || 5432);
const admin = new pg.Client({ connectionString: database.url });
await admin.connect();
await admin.query(JOBS_TABLE_DDL);
const waiters = async (): Promise<number> =>
  Number(
    (
      await admin.query(
        "SELECT count(DISTINCT pid)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
      )
    ).rows[0]?.n,
  );
console.log(`7. connection economy of leader campaigns (${database.label})`);
console.log(
  'campaigns | connections: leading, standing by | all led in | SIGKILL → all led elsewhere in | connections after',
);
try {
  for (const count of COUNTS) {
    const prefix = `bench-campaigns:${randomUUID()}`;
    const leaders = new Fleet(database.url, prefix, count, 'leaders');
    let standbys: Fleet | undefined;
    try {
      await until('the leaders to start', () => leaders.started);
      const startedAt = Date.now();
      await until(`${count} names led`, () => leaders.elected.size === count);
      const ledIn = Math.max(...leaders.elected.values()) - startedAt;
      const standing = new Fleet(database.url, prefix, count, 'standbys');
      standbys = standing;
      await until('the standbys to wait', async () => standing.started && (await waiters()) >= 2);
      // A moment for the polling standbys' first rounds.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const before = [tcpConnectionsOf(leaders.pid, port), tcpConnectionsOf(standing.pid, port)];
      const killedAt = Date.now();
      await leaders.kill();
      await until(`${count} names taken over`, () => standing.elected.size === count);
      const takeover = Math.max(...standing.elected.values()) - killedAt;
      const after = tcpConnectionsOf(standing.pid, port);
      console.log(
        `${String(count).padStart(9)} | ${before[0]}, ${before[1]} | ${ledIn} ms | ${takeover} ms | ${after}`,
      );
    } finally {
      await leaders.kill();
      await standbys?.kill();
    }
  }
  await heldSessionLocks(database.url, COUNTS);
} finally {
  await admin.end();
  await database.close();
}
