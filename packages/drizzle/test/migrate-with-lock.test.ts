import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Backdoor } from '@pglock/test-kit';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import { npmVersion } from 'drizzle-orm/version';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  AdvisoryLockError,
  type DrizzleRootDatabase,
  LockNotAcquiredError,
  lockKey,
  MIGRATION_LOCK_KEY,
  migrateWithLock,
} from '../src/index.ts';

const url = inject('databaseUrl');
const childPath = fileURLToPath(new URL('./fixtures/migrate-child.ts', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/migrations', import.meta.url));
let backdoor: Backdoor;
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  backdoor = await Backdoor.open(url);
});
afterAll(async () => {
  for (const undo of cleanup) await undo();
  await backdoor.close();
});

const migrations = [
  { tag: '0000_init', when: '20231114221320' },
  { tag: '0001_note', when: '20231114221321' },
];

/**
 * A copy of the fixture migrations writing into a fresh schema (which also holds Drizzle's journal
 * table), in the folder layout of the drizzle-orm under test: 0.x reads `meta/_journal.json` and
 * `<tag>.sql`, 1.0 one folder per migration, `<timestamp>_<name>/migration.sql`.
 */
async function freshMigrations(): Promise<{ folder: string; schema: string }> {
  const schema = `pglock_mig_${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const folder = await mkdtemp(join(tmpdir(), 'pglock-drizzle-migrations-'));
  const v1 = Number(npmVersion.split('.')[0]) >= 1;
  if (!v1) {
    await mkdir(join(folder, 'meta'));
    await writeFile(join(folder, 'meta/_journal.json'), await readFile(join(fixture, 'meta/_journal.json')));
  }
  for (const { tag, when } of migrations) {
    const text = (await readFile(join(fixture, `${tag}.sql`), 'utf8')).replaceAll('__SCHEMA__', schema);
    const name = `${when}_${tag.slice(5)}`;
    if (v1) await mkdir(join(folder, name));
    await writeFile(join(folder, v1 ? `${name}/migration.sql` : `${tag}.sql`), text);
  }
  await backdoor.query(`CREATE SCHEMA ${schema}`);
  await backdoor.query(`CREATE TABLE ${schema}.runs (migration text NOT NULL, pid int NOT NULL)`);
  cleanup.push(
    () => backdoor.query(`DROP SCHEMA ${schema} CASCADE`),
    () => rm(folder, { recursive: true, force: true }),
  );
  return { folder, schema };
}

interface Outcome {
  readonly event: 'done' | 'failed';
  readonly ms?: number;
  readonly code?: string;
}

/** Starts `count` processes, lets them all reach "ready", then releases them at once. */
async function deployAtOnce(count: number, driver: string, mode: string, folder: string, schema: string) {
  const children: ChildProcess[] = [];
  const outcomes = Array.from({ length: count }, (_, i) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@pglock/source', '--import', 'tsx', childPath, driver, mode, folder, schema],
      { env: { ...process.env, DATABASE_URL: url }, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    children[i] = child;
    const events: Record<string, unknown>[] = [];
    const ready = new Promise<void>((resolve) =>
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const event = JSON.parse(line) as Record<string, unknown>;
        events.push(event);
        if (event.event === 'ready') resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { ready, exited, events };
  });
  await Promise.all(outcomes.map((o) => o.ready));
  for (const child of children) child.stdin?.write('go\n');
  await Promise.all(outcomes.map((o) => o.exited));
  return outcomes.map((o) => o.events.find((e) => e.event !== 'ready') as unknown as Outcome);
}

async function applied(schema: string) {
  const runs = await backdoor.query<{ migration: string }>(
    `SELECT migration FROM ${schema}.runs ORDER BY migration`,
  );
  const journal = await backdoor.query(`SELECT hash FROM ${schema}.__drizzle_migrations`);
  return { runs: runs.map((r) => r.migration), journal: journal.length };
}

describe('migrateWithLock', () => {
  it('the key is lockKey("drizzle-migrations", { namespace: "pglock" }), as documented', () => {
    expect(MIGRATION_LOCK_KEY).toEqual(lockKey('drizzle-migrations', { namespace: 'pglock' }));
    expect(MIGRATION_LOCK_KEY.form === 'bigint' && MIGRATION_LOCK_KEY.value).toBe(-1367691981684763460n);
  });

  it.each(['node-postgres', 'postgres.js'])(
    '%s: 4 processes deploying at once apply each migration exactly once; the others wait, then see them applied',
    async (driver) => {
      const { folder, schema } = await freshMigrations();
      const outcomes = await deployAtOnce(4, driver, 'locked', folder, schema);
      console.info(`[migrateWithLock ${driver}] ${JSON.stringify(outcomes)}`);
      expect(outcomes.map((o) => o.event)).toEqual(['done', 'done', 'done', 'done']);
      expect(await applied(schema)).toEqual({ runs: ['0000_init', '0001_note'], journal: 2 });
      // The migration sleeps 1 s: the three that did not run it waited about that long for the lock.
      const waited = outcomes.filter((o) => (o.ms ?? 0) >= 900);
      expect(waited.length).toBe(4);
      expect(await backdoor.locksOn((MIGRATION_LOCK_KEY as { value: bigint }).value)).toEqual([]);
    },
  );

  it("control: Drizzle's own migrate() from 4 processes at once fails or applies a migration twice", async () => {
    const { folder, schema } = await freshMigrations();
    const outcomes = await deployAtOnce(4, 'node-postgres', 'plain', folder, schema);
    const { runs, journal } = await applied(schema);
    const failures = outcomes.filter((o) => o.event === 'failed');
    console.info(
      `[drizzle migrate() unlocked] ${failures.length} of 4 failed (${failures.map((f) => f.code).join(', ')}); 0000_init ran ${runs.filter((r) => r === '0000_init').length} times; journal rows ${journal}`,
    );
    expect(failures.length > 0 || runs.length > 2).toBe(true);
  });

  it('waits at most timeoutMs while another session holds the key, then throws LockNotAcquiredError', async () => {
    const { folder, schema } = await freshMigrations();
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      await holder.query('SELECT pg_advisory_lock($1::bigint)', [
        String((MIGRATION_LOCK_KEY as { value: bigint }).value),
      ]);
      const started = performance.now();
      const error = await migrateWithLock(drizzleNodePg({ client: pool }), {
        migrationsFolder: folder,
        migrationsSchema: schema,
        timeoutMs: 300,
      }).catch((e: unknown) => e);
      expect(LockNotAcquiredError.is(error)).toBe(true);
      // The message names the function called, not the core verb it runs on.
      expect((error as Error).message).toMatch(/^migrateWithLock: the lock .* was not granted within 300 ms/);
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      expect((await applied(schema).catch(() => ({ runs: [] }))).runs).toEqual([]);
      await holder.query('SELECT pg_advisory_unlock_all()');
      await migrateWithLock(drizzleNodePg({ client: pool }), {
        migrationsFolder: folder,
        migrationsSchema: schema,
      });
      expect(await applied(schema)).toEqual({ runs: ['0000_init', '0001_note'], journal: 2 });
      expect(pool.totalCount).toBeGreaterThan(0);
    } finally {
      await holder.end();
      await pool.end();
    }
  });

  it('over a pg.Pool of one connection, a lone pg.Client and postgres.js: migrates in process, leaves nothing locked', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const sql = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      for (const db of [
        drizzleNodePg({ client: pool }),
        drizzleNodePg({ client }),
        drizzlePostgresJs({ client: sql }),
      ]) {
        const { folder, schema } = await freshMigrations();
        await migrateWithLock(db, { migrationsFolder: folder, migrationsSchema: schema, timeoutMs: 10_000 });
        expect(await applied(schema)).toEqual({ runs: ['0000_init', '0001_note'], journal: 2 });
        expect(await backdoor.locksOn((MIGRATION_LOCK_KEY as { value: bigint }).value)).toEqual([]);
      }
      // The app's own connections are still usable.
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await Promise.all([pool.end(), client.end(), sql.end({ timeout: 5 })]);
    }
  });

  it('refuses a transaction, a PGlite database and a missing folder before any SQL', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const db = drizzleNodePg({ client: pool });
    try {
      const inTx = await db
        .transaction((tx) => migrateWithLock(tx as unknown as DrizzleRootDatabase, { migrationsFolder: 'x' }))
        .catch((e: unknown) => e);
      expect(AdvisoryLockError.is(inTx) && inTx.code).toBe('LOCK_USAGE');
      const lite = drizzlePglite();
      const onPglite = await migrateWithLock(lite, { migrationsFolder: 'x' }).catch((e: unknown) => e);
      expect(AdvisoryLockError.is(onPglite) && onPglite.code).toBe('LOCK_USAGE');
      await lite.$client.close();
      const noFolder = await migrateWithLock(db, { migrationsFolder: '' }).catch((e: unknown) => e);
      expect(AdvisoryLockError.is(noFolder) && noFolder.code).toBe('INVALID_LOCK_OPTIONS');
    } finally {
      await pool.end();
    }
  });
});
