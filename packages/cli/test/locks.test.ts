import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockTag } from '@pglock/core/internal';
import { acquireSessionLock, deriveKey, lockKey, type SessionLock, withLock } from '@pglock/pg';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type LockEntry, type LockReport, registerLockNames } from '../src/index.ts';
import { runCli, startCli } from './run-cli.ts';

const url = inject('databaseUrl');
let backdoor: Backdoor;
const pools: pg.Pool[] = [];
const newPool = (applicationName: string) => {
  const pool = new pg.Pool({ connectionString: url, max: 2, application_name: applicationName });
  pool.on('error', () => undefined);
  pools.push(pool);
  return pool;
};
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(async () => {
  await Promise.all([backdoor.close(), ...pools.map((p) => p.end())]);
});

const bigintText = (name: string, namespace?: string) => String(deriveKey(name, namespace));
const find = (report: LockReport, key: string) =>
  report.locks.find((l) => l.key.form === 'bigint' && l.key.value === key);

describe('pglock locks', () => {
  it('--json shows holders, waiters, modes, pids and names (names file and registry) in a live contention scenario', async () => {
    const run = Math.random().toString(36).slice(2);
    const fileName = `cli-locks:file:${run}`; // named in the --names file, in namespace "ops"
    const registryName = `cli-locks:registry:${run}`; // published with registerLockNames
    const unnamed = `cli-locks:unnamed:${run}`; // nobody tells the CLI
    const dir = await mkdtemp(join(tmpdir(), 'pglock-cli-'));
    const namesFile = join(dir, 'names.txt');
    await writeFile(namesFile, `# lock names\nops\t${fileName}\nsomething-else\n`);
    await registerLockNames(backdoorPool(), [registryName]);

    // One exclusive holder and two waiters; a shared pair with one exclusive waiter; an unnamed holder.
    const holder = await acquireSessionLock(newPool('holder-a'), fileName, { namespace: 'ops' });
    const releases: (() => void)[] = [];
    const hold = (pool: pg.Pool, name: string, options: { namespace?: string; shared?: boolean }) =>
      withLock(pool, name, () => new Promise<void>((resolve) => releases.push(resolve)), options);
    const fileKey = BigInt(bigintText(fileName, 'ops'));
    // The second waiter starts once the first waits, so that their order in pg_locks is known.
    const waiting = [withLock(newPool('waiter-1'), fileName, async () => undefined, { namespace: 'ops' })];
    await backdoor.waitForWaiters(fileKey, 1);
    waiting.push(withLock(newPool('waiter-2'), fileName, async () => undefined, { namespace: 'ops' }));
    const registryKey = BigInt(bigintText(registryName));
    const shared = [
      hold(newPool('reader-1'), registryName, { shared: true }),
      hold(newPool('reader-2'), registryName, { shared: true }),
    ];
    await backdoor.waitFor(
      'two shared holders',
      async () => (await backdoor.locksOn(registryKey)).length === 2,
    );
    const writer = withLock(newPool('writer'), registryName, async () => undefined);
    const loner: SessionLock = await acquireSessionLock(newPool('loner'), unnamed);
    await backdoor.waitForWaiters(fileKey, 2);
    await backdoor.waitForWaiters(registryKey, 1);

    const cleanUp = async () => {
      await holder.release().catch(() => undefined);
      await Promise.all(waiting);
      for (const release of releases) release();
      await Promise.all([...shared, writer]);
      await loner.release().catch(() => undefined);
    };
    try {
      const { code, stdout, stderr } = await runCli(['locks', '--json', '--names', namesFile], url);
      expect(code, stderr).toBe(0);
      const report = JSON.parse(stdout) as LockReport;

      const contended = find(report, String(fileKey)) as LockEntry;
      expect(contended).toMatchObject({
        name: fileName,
        namespace: 'ops',
        nameSource: 'names-file',
        classid: lockTag(lockKey(fileKey)).classid,
        objid: lockTag(lockKey(fileKey)).objid,
      });
      expect(contended.holders).toEqual([
        expect.objectContaining({
          pid: holder.pid,
          mode: 'exclusive',
          applicationName: 'holder-a',
          heldMs: expect.any(Number),
        }),
      ]);
      expect(contended.waiters.map((w) => w.applicationName)).toEqual(['waiter-1', 'waiter-2']);
      expect(
        contended.waiters.every((w) => w.mode === 'exclusive' && typeof w.waitedMs === 'number' && w.pid),
      ).toBe(true);
      expect(contended.waiters[0]!.waitedMs!).toBeGreaterThanOrEqual(contended.waiters[1]!.waitedMs!);

      const pair = find(report, String(registryKey)) as LockEntry;
      expect(pair).toMatchObject({ name: registryName, namespace: null, nameSource: 'registry' });
      expect(pair.holders.map((h) => [h.applicationName, h.mode]).sort()).toEqual([
        ['reader-1', 'shared'],
        ['reader-2', 'shared'],
      ]);
      expect(pair.waiters.map((w) => [w.applicationName, w.mode])).toEqual([['writer', 'exclusive']]);

      const unknown = find(report, bigintText(unnamed)) as LockEntry;
      expect(unknown).toMatchObject({ name: null, nameSource: null, waiters: [] });
      expect(unknown.holders).toEqual([
        expect.objectContaining({ pid: loner.pid, applicationName: 'loner' }),
      ]);

      // Contention on top: the key with two waiters before the one with one, before the uncontended one.
      const order = report.locks.map((l) => (l.key.form === 'bigint' ? l.key.value : ''));
      expect(order.indexOf(String(fileKey))).toBeLessThan(order.indexOf(String(registryKey)));
      expect(order.indexOf(String(registryKey))).toBeLessThan(order.indexOf(bigintText(unnamed)));

      // The human view shows the same, within 80 columns and without colour on a pipe.
      const human = await runCli(['locks', '--names', namesFile], url);
      expect(human.code).toBe(0);
      expect(human.stdout).toContain(`${fileName} [ops]`);
      expect(human.stdout).toMatch(/2 waiting/);
      expect(human.stdout).not.toContain('\x1b[');
      for (const line of human.stdout.split('\n')) expect([...line].length).toBeLessThanOrEqual(80);
    } finally {
      await cleanUp();
    }
    const after = JSON.parse((await runCli(['locks', '--json'], url)).stdout) as LockReport;
    for (const key of [fileKey, registryKey].map(String).concat(bigintText(unnamed)))
      expect(find(after, key)).toBeUndefined();
  });

  it('ignores registry rows whose key is not the hash of their name', async () => {
    const name = `cli-locks:forged:${Math.random()}`;
    await registerLockNames(backdoorPool(), ['placeholder-for-table']);
    const holder = await acquireSessionLock(newPool('forged'), name);
    await backdoor.query(
      'INSERT INTO pglock_lock_names (key, name) VALUES ($1::text::bigint, $2) ON CONFLICT (key) DO UPDATE SET name = EXCLUDED.name',
      [bigintText(name), 'not-the-real-name'],
    );
    const report = JSON.parse((await runCli(['locks', '--json'], url)).stdout) as LockReport;
    expect(find(report, bigintText(name))).toMatchObject({ name: null });
    await holder.release();
  });

  it('shows how long a session lock has been held, across its heartbeats', async () => {
    const name = `cli-locks:held-for:${Math.random()}`;
    const since = Date.now();
    // A heartbeat every 100 ms: each one used to reset the time pg_stat_activity reports.
    const holder = await acquireSessionLock(newPool('held-for'), name, { heartbeatMs: 100 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const report = JSON.parse((await runCli(['locks', '--json'], url)).stdout) as LockReport;
      const [held] = find(report, bigintText(name))?.holders ?? [];
      expect(held?.heldMs).toBeGreaterThanOrEqual(1_400);
      expect(held?.heldMs).toBeLessThanOrEqual(Date.now() - since + 100);
    } finally {
      await holder.release();
    }
  });

  it('shows how long a pglock run job has held its lock', async () => {
    const name = `cli-locks:run-held-for:${Math.random()}`;
    const job = startCli(['run', name, '--', 'sh', '-c', 'echo started; exec sleep 30'], url);
    try {
      await backdoor.waitFor('the job', async () => job.stdout().includes('started'));
      const started = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 2_500)); // past two heartbeats (1 s)
      // The CLI reads the server's clock once it is up, which under load is seconds later: held at
      // least from `started` to the moment it was asked, at most until it answered.
      const asked = Date.now();
      const report = JSON.parse((await runCli(['locks', '--json'], url)).stdout) as LockReport;
      const [held] = find(report, bigintText(name))?.holders ?? [];
      expect(held?.applicationName).toBe('pglock run');
      expect(held?.heldMs).toBeGreaterThanOrEqual(asked - started - 200);
      // The lock was taken before the job printed: under load, seconds before; never minutes.
      expect(held?.heldMs).toBeLessThanOrEqual(Date.now() - started + 10_000);
    } finally {
      job.child.kill('SIGTERM');
      await job.exited;
    }
  });

  it('registerLockNames rejects a bad name before any SQL', async () => {
    await expect(registerLockNames(backdoorPool(), [''])).rejects.toThrow(/must not be empty/);
  });

  it('--watch --json prints one snapshot per line until interrupted, then exits 0', async () => {
    const cli = startCli(['locks', '--watch', '--json', '--interval', '100ms'], url);
    await backdoor.waitFor('two snapshots', async () => cli.stdout().split('\n').length > 2);
    cli.child.kill('SIGINT');
    expect((await cli.exited).code).toBe(0);
    for (const line of cli.stdout().trim().split('\n')) expect(JSON.parse(line)).toHaveProperty('locks');
  });

  it.each([
    ['a bad URL', ['--url', 'not a url'], 64, /--url is not a URL/],
    ['a non-PostgreSQL URL', ['--url', 'mysql://x@localhost/db'], 64, /must start with postgres:\/\//],
    [
      'a refused connection',
      ['--url', 'postgres://postgres@127.0.0.1:1/test'],
      69,
      /127\.0\.0\.1:1\/test \(from --url\): connection refused/,
    ],
    [
      'an unknown role',
      ['--url', withUser(url, 'pglock_no_such_role')],
      69,
      /refused the login.*pglock_no_such_role/,
    ],
  ])('reports %s clearly', async (_label, args, expected, message) => {
    const { code, stderr } = await runCli(['locks', ...args], url);
    expect(code).toBe(expected);
    expect(stderr).toMatch(message);
    expect(stderr.split('\n').length).toBeLessThanOrEqual(2);
  });

  it('without DATABASE_URL or --url says how to give one', async () => {
    const { code, stderr } = await runCli(['locks'], url, { DATABASE_URL: '' });
    expect(code).toBe(64);
    expect(stderr).toContain('set DATABASE_URL or pass --url');
  });
});

let registryPool: pg.Pool | undefined;
function backdoorPool(): pg.Pool {
  registryPool ??= newPool('registry');
  return registryPool;
}

function withUser(text: string, user: string): string {
  const parsed = new URL(text);
  parsed.username = user;
  return parsed.toString();
}
