import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import postgres from 'postgres';
import { expect, inject, it } from 'vitest';
import { watchPostgresJsWrites } from '../src/postgres-js-writes.ts';
import { startTcpProxy } from '../src/tcp-proxy.ts';
import { TeardownEvidence, upstreamIssueOf } from '../src/teardown-evidence.ts';

// The two upstream bugs a chaos worker's stuck close is reported by, reproduced with the driver or
// ORM alone (no pglock): if one stops reproducing, the upstream fix has landed and the chaos report
// (and docs/reliability.md) should say so.

/** Until backend `pid` runs a statement (as `admin` sees it in `pg_stat_activity`). */
async function runningOn(admin: pg.Client, pid: number | undefined): Promise<void> {
  await expect
    .poll(
      async () =>
        (await admin.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active'`, [pid]))
          .rowCount,
    )
    .toBe(1);
}

it('a statement in flight when its backend is terminated: postgres.js end() waits out its timeout (porsager/postgres#1097)', async () => {
  const url = inject('databaseUrl');
  const admin = new pg.Client(url);
  await admin.connect();
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    const [row] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const sleeping = sql`SELECT pg_sleep(5)`.then(
      () => undefined,
      (error: unknown) => error,
    );
    await runningOn(admin, row?.pid);
    await admin.query('SELECT pg_terminate_backend($1)', [row?.pid]);
    const error = await sleeping;
    expect((error as { code?: unknown }).code).toBe('CONNECTION_CLOSED');
    const evidence = new TeardownEvidence('drizzle-postgres-js');
    evidence.note(new Error('the lock call failed', { cause: error }));
    expect(upstreamIssueOf(evidence.explain())).toBe('porsager/postgres#1097');
    const started = performance.now();
    await sql.end({ timeout: 1 });
    expect(performance.now() - started, 'end() settled before its timeout: #1097 fixed?').toBeGreaterThan(
      900,
    );
  } finally {
    await admin.end();
  }
});

it('Drizzle on node-postgres: a failed BEGIN leaves its client checked out, which pool.end() waits for (drizzle-team/drizzle-orm#6241)', async () => {
  const pool = new pg.Pool({ connectionString: inject('databaseUrl'), max: 2 });
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  // The connection dies as Drizzle checks it out, so its BEGIN fails (a fault, on a real socket).
  pool.once('acquire', (client) => {
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  });
  const error = await drizzle({ client: pool })
    .transaction(async () => 'ran')
    .then(
      () => undefined,
      (failure: unknown) => failure,
    );
  expect(String((error as Error).message)).toMatch(/^Failed query: begin/);
  expect({ total: pool.totalCount, idle: pool.idleCount }, 'the client was released: #6241 fixed?').toEqual({
    total: 1,
    idle: 0,
  });
  const evidence = new TeardownEvidence('drizzle-node-postgres');
  evidence.note(error);
  expect(upstreamIssueOf(evidence.explain())).toBe('drizzle-team/drizzle-orm#6241');
  // pool.end() would never settle; the leaked client's socket is gone, so nothing is left running.
});

// The chaos worker's stuck-step verdict (`strandedByUpstream`): on kysely-postgres-js, a statement of
// the callback fails with ECONNRESET, and Kysely's ROLLBACK, issued before postgres.js has seen the
// close, waits in `reserve()`'s own queue; the close never settles it, so the transaction never ends.
it('postgres.js alone: a statement queued on a reserved connection never settles once the connection is reset (porsager/postgres#1186, in reserve())', async () => {
  const url = inject('databaseUrl');
  const admin = new pg.Client(url);
  await admin.connect();
  const proxy = await startTcpProxy(url);
  const watch = watchPostgresJsWrites();
  const sql = postgres(proxy.url, {
    max: 1,
    onnotice: () => undefined,
    debug: watch.hooks.debug,
    onclose: watch.hooks.onclose,
  });
  try {
    const reserved = await sql.reserve();
    const [row] = await reserved.unsafe<{ pid: number }[]>('SELECT pg_backend_pid() AS pid');
    // A statement with parameters not prepared yet is described first, and postgres.js marks the
    // connection full: the next statement waits in reserve()'s queue, as Kysely's ROLLBACK does.
    const text = 'SELECT pg_sleep($1::float8) AS slept';
    const first = reserved.unsafe(text, [5]).then(
      () => undefined,
      (error: unknown) => error,
    );
    let settled = false;
    reserved.unsafe('rollback').then(
      () => (settled = true),
      () => (settled = true),
    );
    await runningOn(admin, row?.pid);
    proxy.reset();
    // The reset reaches postgres.js as the socket's error or, on a busy machine, as its close first.
    expect(['ECONNRESET', 'CONNECTION_CLOSED']).toContain(((await first) as { code?: unknown }).code);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(settled, 'the queued statement settled: #1186 fixed for reserve()?').toBe(false);
    // What the worker's verdict reads: the failed statement's connection saw its close next, and no
    // COMMIT or ROLLBACK was ever handed to it.
    expect(watch.nothingHandedAfter(text)).toBeTypeOf('number');
    expect(watch.nothingHandedAfter('SELECT pg_backend_pid() AS pid')).toBeUndefined();
  } finally {
    void sql.end({ timeout: 0 }).catch(() => undefined);
    await proxy.close();
    await admin.end();
  }
});

it('a worker whose failures point to no known bug is reported as open', () => {
  const evidence = new TeardownEvidence('kysely-postgres-js');
  evidence.note(new Error('something else'));
  expect(upstreamIssueOf(evidence.explain())).toBeUndefined();
});
