import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DevDatabase } from '../src/dev-database.ts';
import { generateClient } from '../src/generate-client.ts';
import { parseOptions, UsageError } from '../src/options.ts';
import type { Verification } from '../src/verify.ts';
import { testDatabase } from './database.ts';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
let dir: string;
let database: DevDatabase;

interface Report {
  readonly verification: Verification;
  readonly instances: readonly { label: string; status: string; rebuilds: number; updates: number }[];
  readonly timeline: string;
}

/** Runs `pnpm demo` the way the root script does (a child process), against the test database. */
async function demo(name: string, args: readonly string[]) {
  const report = join(dir, `${name}.json`);
  const out = join(dir, `${name}.html`);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', main, '--', ...args, '--report', report, '--out', out],
    { env: { ...process.env, DATABASE_URL: database.url }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output += String(chunk)));
  child.stderr.on('data', (chunk) => (output += String(chunk)));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const parsed = JSON.parse(await readFile(report, 'utf8').catch(() => 'null')) as Report | null;
  return { code, output, report: parsed, page: await readFile(out, 'utf8').catch(() => '') };
}

beforeAll(async () => {
  database = await testDatabase();
  dir = await mkdtemp(join(tmpdir(), 'pglock-demo-test-'));
  await generateClient(); // once, before two runs could race to generate it
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await database?.stop();
});

describe.concurrent('pnpm demo (short mode)', () => {
  it('four adapters, the leader killed mid-rebuild: passing verification and exit code 0', async () => {
    const { code, output, report, page } = await demo('locked', ['--seconds', '6']);
    expect(code, output).toBe(0);
    const v = report!.verification;
    expect(v.ok).toBe(true);
    expect(v.overlaps).toBe(0);
    expect(v.lostUpdates).toBe(0);
    expect(v.locksLeft).toBe(0);
    expect(v.rebuilds).toBeGreaterThan(0);
    expect(v.skips).toBeGreaterThan(0);
    expect(v.updates).toBeGreaterThan(0);
    expect(v.kill?.rebuildRolledBack).toBe(true);
    expect(v.kill?.recoveryMs).toBeGreaterThanOrEqual(0);
    expect(v.kill?.updatesAfter).toBeGreaterThan(0);
    // The digest (runOnce): once in every period the run spanned, by the server's clock.
    expect(v.digest.runs).toBeGreaterThanOrEqual(4);
    expect(v.digest.maxPerPeriod).toBe(1);
    expect(v.digest.missedPeriods).toBe(0);
    expect(v.digest.outsidePeriod).toBe(0);
    // The scheduler (leader): the killed instance led, a standby took over within 1 s, one leader at a time.
    expect(v.leader.killedLed).toBe(true);
    expect(v.leader.terms).toBeGreaterThanOrEqual(2);
    expect(v.leader.failoverMs).toBeGreaterThanOrEqual(0);
    expect(v.leader.failoverMs).toBeLessThan(1_000);
    expect(v.leader.failoverBy).not.toBe(v.kill?.label);
    expect(v.leader.overlaps).toBe(0);
    expect(v.leader.termsIncreasing).toBe(true);
    expect(v.leader.ticks).toBeGreaterThan(0);
    expect(output).toMatch(/runs per period +1 +must be 1 +ok/);
    expect(output).toMatch(/failover: kill to new onElected +\d+ ms/);
    expect(report!.instances.map((i) => i.label)).toEqual(['#1 pg', '#2 prisma', '#3 drizzle', '#4 kysely']);
    expect(report!.instances.filter((i) => i.status === 'killed')).toHaveLength(1);
    expect(report!.instances.filter((i) => i.status === 'done')).toHaveLength(3);
    // Every adapter really ran its updates.
    for (const instance of report!.instances) expect(instance.updates, instance.label).toBeGreaterThan(0);
    expect(output).toContain('PASS: every check holds.');
    expect(page).toContain('<svg');
    expect(page).toContain(`SIGKILL ${v.kill?.label}`);
  });

  it('--no-lock (locks that exclude nothing): the checker reports lost updates, overlaps, periods run twice and two leaders, exit code 1', async () => {
    const { code, output, report } = await demo('unlocked', [
      '--no-lock',
      '--no-kill',
      '--adapters',
      'pg,kysely',
      '--users',
      '2',
      '--seconds',
      '4',
    ]);
    expect(code, output).toBe(1);
    const v = report!.verification;
    expect(v.ok).toBe(false);
    expect(v.lostUpdates).toBeGreaterThan(0);
    expect(v.overlaps).toBeGreaterThan(0);
    expect(v.skips).toBe(0);
    expect(v.digest.maxPerPeriod).toBeGreaterThan(1);
    // Every instance campaigns under a name of its own: each is elected with term 1, all at once.
    expect(v.leader.terms).toBe(4);
    expect(v.leader.overlaps).toBeGreaterThan(0);
    expect(v.leader.termsIncreasing).toBe(false);
    expect(output).toContain('FAIL');
  });
});

describe('flags', () => {
  it('parses counts, adapter lists and drops the bare -- pnpm may pass on', () => {
    const options = parseOptions(
      ['--', '--instances', '8', '--seconds', '30', '--adapters', 'prisma,drizzle'],
      'x',
    );
    expect(options).toMatchObject({
      instances: 8,
      seconds: 30,
      adapters: ['prisma', 'drizzle'],
      kill: true,
      lock: true,
    });
    expect(parseOptions(['--help'], 'x')).toBe('help');
  });

  it('rejects unknown adapters, bad numbers and unknown flags', () => {
    expect(() => parseOptions(['--adapters', 'pg,sequelize'], 'x')).toThrow(UsageError);
    expect(() => parseOptions(['--instances', '1'], 'x')).toThrow(/from 2/);
    expect(() => parseOptions(['--seconds', 'soon'], 'x')).toThrow(UsageError);
    expect(() => parseOptions(['--turbo'], 'x')).toThrow(/Unknown option/);
  });
});
