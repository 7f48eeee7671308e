import { acquireSessionLock, lockKey } from '@pglock/pg';
import { Backdoor } from '@pglock/test-kit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli, startCli } from './run-cli.ts';

const url = inject('databaseUrl');
const bouncer = inject('pgbouncer');
let backdoor: Backdoor;
let pool: pg.Pool;
beforeAll(async () => {
  backdoor = await Backdoor.open(url);
  pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
});
afterAll(async () => {
  await Promise.all([backdoor.close(), pool.end()]);
});

const unique = (label: string) => {
  const name = `cli-run:${label}:${Math.random()}`;
  return { name, key: (lockKey(name) as { value: bigint }).value };
};

describe('pglock run', () => {
  it.each([
    ['a command that succeeds', ['true'], 0],
    ['a command that fails with exit 3', ['sh', '-c', 'exit 3'], 3],
    ['a command killed by SIGKILL (128+9)', ['sh', '-c', 'kill -9 $$'], 137],
    ['a command that does not exist (127)', ['pglock-no-such-command'], 127],
  ])('passes the exit code through for %s, and leaves nothing locked', async (_label, command, expected) => {
    const { name, key } = unique('exit');
    const { code, stderr } = await runCli(['run', name, '--', ...command], url);
    expect(code, stderr).toBe(expected);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('holds the lock on its own session while the command runs', async () => {
    const { name, key } = unique('held');
    // The command itself reports whether pg_locks shows the lock, from a third connection.
    const check = `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'pglock run' AND l.objid = ${Number(BigInt.asUintN(64, key) & 0xffffffffn)}`;
    const { code, stdout } = await runCli(
      [
        'run',
        name,
        '--',
        process.execPath,
        '-e',
        `const pg=require('pg');const c=new pg.Client(process.env.DATABASE_URL);c.connect().then(()=>c.query(${JSON.stringify(check)})).then(r=>{console.log(r.rows[0].count);return c.end()})`,
      ],
      url,
    );
    expect(code).toBe(0);
    expect(stdout.trim()).toBe('1');
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('a signal before the command started ends the run with 128+n and nothing locked', async () => {
    const { name, key } = unique('early-signal');
    const holder = await acquireSessionLock(pool, name);
    const cli = startCli(['run', name, '--', 'echo', 'ran'], url);
    await backdoor.waitForWaiters(key, 1);
    cli.child.kill('SIGINT');
    expect((await cli.exited).code).toBe(130);
    expect(cli.stdout()).toBe('');
    expect(await backdoor.locksOn(key)).toEqual([{ pid: holder.pid, granted: true, mode: 'ExclusiveLock' }]);
    await holder.release();
  });

  it('forwards SIGTERM to the command, exits 128+15, and releases the lock', async () => {
    const { name, key } = unique('signal');
    const cli = startCli(['run', name, '--', 'sh', '-c', 'echo started; exec sleep 30'], url);
    await backdoor.waitFor('the command', async () => cli.stdout().includes('started'));
    cli.child.kill('SIGTERM');
    expect((await cli.exited).code).toBe(143);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });

  it('with --timeout 0 exits 75 without running the command when another session holds the lock', async () => {
    const { name, key } = unique('busy');
    const holder = await acquireSessionLock(pool, name);
    try {
      const { code, stdout, stderr } = await runCli(
        ['run', name, '--timeout', '0', '--', 'echo', 'ran'],
        url,
      );
      expect(code).toBe(75);
      expect(stdout).toBe('');
      expect(stderr).toContain('is held by another session');
      const timed = await runCli(['run', name, '--timeout', '200ms', '--', 'echo', 'ran'], url);
      expect(timed.code).toBe(75);
      expect(timed.stderr).toContain('was not free within 200 ms');
      expect(await backdoor.locksOn(key)).toEqual([
        { pid: holder.pid, granted: true, mode: 'ExclusiveLock' },
      ]);
    } finally {
      await holder.release();
    }
  });

  it('waits for a busy lock by default and runs the command once it is released', async () => {
    const { name, key } = unique('queue');
    const holder = await acquireSessionLock(pool, name);
    const cli = startCli(['run', name, '--', 'echo', 'ran'], url);
    await backdoor.waitForWaiters(key, 1);
    expect(cli.stdout()).toBe('');
    await holder.release();
    expect((await cli.exited).code).toBe(0);
    expect(cli.stdout()).toBe('ran\n');
  });

  it('stops the command and exits 70 when the lock is lost (backend terminated)', async () => {
    const { name, key } = unique('lost');
    const cli = startCli(['run', name, '--', 'sh', '-c', 'echo started; exec sleep 30'], url);
    await backdoor.waitFor('the command', async () => cli.stdout().includes('started'));
    const [lock] = await backdoor.waitFor('the lock', async () => {
      const locks = await backdoor.locksOn(key);
      return locks.length === 1 ? locks : undefined;
    });
    const started = Date.now();
    await backdoor.query('SELECT pg_terminate_backend($1)', [lock?.pid]);
    expect((await cli.exited).code).toBe(70);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(cli.stderr()).toMatch(/was lost.*Stopping the command/);
  });

  it('needs a command after --', async () => {
    const { code, stderr } = await runCli(['run', 'x'], url);
    expect(code).toBe(64);
    expect(stderr).toContain('Usage: pglock run <name>');
  });

  it('without --timeout, a wait the server\'s lock_timeout ends says so (exit 75, never "within undefined ms")', async () => {
    const { name } = unique('server-timeout');
    const holder = await acquireSessionLock(pool, name);
    try {
      const serverTimeout = ['--url', withLockTimeout(url, 200)];
      for (const argv of [
        ['run', name, ...serverTimeout, '--', 'echo', 'ran'],
        ['wait', name, ...serverTimeout],
      ]) {
        const { code, stdout, stderr } = await runCli(argv, url);
        expect(code, stderr).toBe(75);
        expect(stdout).toBe('');
        expect(stderr).toContain("was not free before the server's lock_timeout ended the wait");
        expect(stderr).not.toContain('undefined');
      }
    } finally {
      await holder.release();
    }
  });

  it.skipIf(!('transactionUrl' in bouncer))(
    'through a transaction-mode pooler refuses (exit 64) and never runs the command',
    async () => {
      const { transactionUrl } = bouncer as { transactionUrl: string };
      const { name, key } = unique('pooler');
      // Two at once: before the pooler check, both ran (the second landed on the holder's backend).
      const runs = await Promise.all(
        [1, 2].map(() =>
          runCli(['run', name, '--timeout', '0', '--url', transactionUrl, '--', 'echo', 'ran'], url),
        ),
      );
      for (const { code, stdout, stderr } of runs) {
        expect(code, stderr).toBe(64);
        expect(stdout).toBe('');
        expect(stderr).toMatch(/transaction-mode pooler/);
      }
      expect(await backdoor.locksOn(key)).toEqual([]);
    },
  );
});

describe('pglock wait', () => {
  it('exits 75 when the lock stays busy past --timeout, and 0 once it is free (without keeping it)', async () => {
    const { name, key } = unique('wait');
    const holder = await acquireSessionLock(pool, name);
    const busy = await runCli(['wait', name, '--timeout', '100ms'], url);
    expect(busy.code).toBe(75);
    const cli = startCli(['wait', name], url);
    await backdoor.waitForWaiters(key, 1);
    await holder.release();
    expect((await cli.exited).code).toBe(0);
    expect(await backdoor.locksOn(key)).toEqual([]);
  });
});

/** `url` with a server-side lock_timeout for every session it opens (libpq's `options` parameter). */
function withLockTimeout(text: string, ms: number): string {
  const parsed = new URL(text);
  parsed.searchParams.set('options', `-c lock_timeout=${ms}`);
  return parsed.toString();
}
