// A chaos worker process: opens one subject (an adapter over its public API) and takes a random mix
// of locks on the chaos keys until the deadline, recording each critical section. Transaction-scoped
// sections write inside the lock's transaction; leader-style session locks (a tryAcquireSessionLock
// loop, or a waiting acquireSessionLock) write in one statement that commits only while the holder's
// backend still holds the lock. Workers also call runOnce on a few jobs with short periods (each run
// writes its row in the job's transaction) and campaign with leader (each term ticks: a tick recorded
// only while the term's backend holds the lock, and a write behind the fencing guard). Through the
// pooler lane every session lock and every campaign must be refused.
// Usage: chaos-worker <subject> <direct | pgbouncer> <worker id> <deadline ms | stdin>; with `stdin`,
// the worker reports `ready` and reads the deadline from its first input line.
import { subscribe } from 'node:diagnostics_channel';
import { createInterface } from 'node:readline';
import {
  JobTimedOutError,
  LockLostError,
  LockNotAcquiredError,
  LockUsageError,
  lockChannels,
  lockKey,
  type SessionLock,
} from '@pglock/core';
import {
  type ChaosLane,
  chaosJobs,
  chaosKeys,
  chaosLeaders,
  type WorkerStats,
  zeroStats,
} from './chaos-schema.ts';
import { watchPostgresJsWrites } from './postgres-js-writes.ts';
import { type Sql, subjectNamed } from './subjects.ts';
import { TeardownEvidence } from './teardown-evidence.ts';

const [subjectName, laneText, worker, deadlineText] = process.argv.slice(2);
const url = process.env.DATABASE_URL;
if (!subjectName || !laneText || !worker || !deadlineText || !url) {
  throw new Error('usage: chaos-worker <subject> <lane> <worker> <deadline>');
}
const lane = laneText as ChaosLane;
const definition = subjectNamed(subjectName);
const watch = definition.driver === 'postgres.js' ? watchPostgresJsWrites() : undefined;
const evidence = new TeardownEvidence(definition.name);

// Where each open pglock call is, from core's diagnostics channels: a stuck step says whether it
// waits before the lock (for a pooled connection, BEGIN or the lock itself) or after (its callback,
// COMMIT), so a hang can be told apart from pglock's side.
const phases = new Map<number, string>();
subscribe(lockChannels.requested, (event) =>
  phases.set((event as { id: number }).id, 'requested, not yet granted'),
);
subscribe(lockChannels.acquired, (event) =>
  phases.set((event as { id: number }).id, 'granted, callback or COMMIT running'),
);
for (const done of [lockChannels.notAcquired, lockChannels.released, lockChannels.lost]) {
  subscribe(done, (event) => phases.delete((event as { id: number }).id));
}
const openCalls = () => [...phases.values()].join(', ') || 'no pglock call open';
process.on('uncaughtException', (error) => {
  process.stderr.write(`UNCAUGHT ${String(error)}\n${error instanceof Error ? error.stack : ''}\n`);
  // postgres.js puts the statement on its errors (with `debug` set): whose query was left unhandled.
  const query = (error as { query?: unknown } | null)?.query;
  if (typeof query === 'string') process.stderr.write(`QUERY ${query.replace(/\s+/g, ' ').slice(0, 200)}\n`);
  if (watch?.fatal()) process.stderr.write(`FATAL_WRITE ${JSON.stringify(watch.fatal())}\n`);
  process.exit(70);
});
const subject = await definition.open(url, { pooler: lane === 'pgbouncer', postgresJs: watch?.hooks });
const stats: WorkerStats = zeroStats();
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};
const random = (n: number): number => Math.floor(Math.random() * n);
const pick = <T>(items: readonly T[]): T => items[random(items.length)] as T;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Half the time the backend sits idle, half the time it runs a statement, so kills and terminations
// land in both states.
const dawdle = async (sql: Sql): Promise<void> => {
  if (Math.random() < 0.5) await sleep(random(15));
  else await sql(`SELECT 1 AS one FROM pg_sleep(${(Math.random() * 0.015).toFixed(3)})`);
};
// postgres.js throws, from a timer, a write queued on a connection it has seen close (porsager/postgres
// #1208): a statement the section sent after sleeping in JavaScript on a connection terminated
// meanwhile would crash the worker, with a write neither pglock nor the ORM sent. So on postgres.js a
// section's statements follow one another without a pause, and it sits idle only after its last one:
// what is written next is the ORM's COMMIT, or whatever pglock sends after the callback.
const idleLast = definition.driver === 'postgres.js';

// The callback's statements still waiting for an answer, and those that failed in this step: a stuck
// step says whether it waits on one of its own statements (inside the ORM's transaction) or on none
// (pglock, or the ORM's COMMIT / ROLLBACK), and after what failure.
const inFlight = new Map<number, { readonly text: string; readonly at: number }>();
let statementCount = 0;
interface FailedStatement {
  readonly text: string;
  readonly code: string;
  readonly at: number;
}
let failedStatements: FailedStatement[] = [];
const traced =
  (sql: Sql): Sql =>
  async (text, values) => {
    const id = statementCount++;
    inFlight.set(id, { text: text.replace(/\s+/g, ' ').trim().slice(0, 80), at: Date.now() });
    try {
      return await sql(text, values);
    } catch (error) {
      const code = errorCode(error);
      failedStatements.push({ text, code, at: performance.now() });
      throw error;
    } finally {
      inFlight.delete(id);
    }
  };
/** The driver's code of an error or of its causes (postgres.js: `ECONNRESET`, `CONNECTION_CLOSED`, a SQLSTATE). */
function errorCode(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === 'string') return code;
    current = cause;
  }
  return 'no code';
}
const openStatements = () =>
  `${[...inFlight.values()].map(({ text, at }) => `${text} (${Date.now() - at} ms)`).join('; ') || 'no callback statement waiting'}; failed in this step: ${
    failedStatements
      .map(({ text, code, at }) => `${text.replace(/\s+/g, ' ').slice(0, 40)}: ${code} at ${Math.round(at)}`)
      .join('; ') || 'none'
  }`;

/**
 * A stuck step's upstream cause, when the evidence names one: on postgres.js, every open pglock call
 * granted (pglock waits on nothing of its own), no callback statement waiting, a callback statement
 * failed with its connection (no SQLSTATE: `ECONNRESET`, `CONNECTION_CLOSED`), and that connection's
 * next event was its close, with no COMMIT or ROLLBACK handed to it after. Then the ORM's ROLLBACK
 * after the failure waits in postgres.js's own queue of the reserved connection (`reserve()` queues a
 * statement behind one in flight, and a close never settles that queue): the same defect as
 * porsager/postgres#1186 (there `sql.begin`'s queue), reproduced with postgres.js alone in
 * test/teardown-evidence.test.ts. Or the ORM's ROLLBACK (or COMMIT) was handed to that connection
 * next and was in flight when it closed: postgres.js settles no statement in flight on a close
 * (porsager/postgres#1097, reproduced there too).
 */
function strandedByUpstream(): string | undefined {
  if (definition.driver !== 'postgres.js' || phases.size === 0 || inFlight.size > 0) return undefined;
  if (![...phases.values()].every((phase) => phase.startsWith('granted'))) return undefined;
  for (const failed of failedStatements) {
    if (/^[0-9A-Z]{5}$/.test(failed.code)) continue;
    const connection = watch?.nothingHandedAfter(failed.text);
    if (connection !== undefined) {
      return `porsager/postgres#1186: the callback's statement failed with ${failed.code} on connection ${connection}, whose close came next; the ORM's ROLLBACK never reached the connection (it waits in postgres.js's own queue of the transaction's connection, reserve()'s or sql.begin's, which a close never settles)`;
    }
    const ending = watch?.endInFlightAtClose(failed.text);
    if (ending !== undefined) {
      return `porsager/postgres#1097: the callback's statement failed with ${failed.code} on connection ${ending}; the ORM's ROLLBACK or COMMIT was handed to it next and was in flight when it closed, and postgres.js settles no statement in flight on a close`;
    }
  }
  // No callback statement failed: the callback settled, the ORM handed its COMMIT (and, when that
  // failed, its ROLLBACK) to the connection, which closed with them in flight.
  const stepStart = performance.now() - 20_000;
  const ended = watch?.endedInFlightAtClose(stepStart);
  if (ended !== undefined) {
    return `porsager/postgres#1097: every pglock call granted and no callback statement waiting; the ORM's COMMIT/ROLLBACK was the last thing handed to connection ${ended}, and was in flight when it closed, and postgres.js settles no statement in flight on a close`;
  }
  return undefined;
}

/** The body of a section: read each key's counter, dawdle, write +1 when exclusive, record the section. */
async function section(lockSql: Sql, keys: readonly string[], mode: 'exclusive' | 'shared'): Promise<void> {
  const sql = traced(lockSql);
  const [entry] = await sql('SELECT clock_timestamp()::text AS at');
  const seen = new Map<string, number>();
  for (const key of keys) {
    const [row] = await sql('SELECT value FROM chaos_counters WHERE key = $1::text', [key]);
    seen.set(key, Number(row?.value));
  }
  if (idleLast) await sql(`SELECT 1 AS one FROM pg_sleep(${(Math.random() * 0.015).toFixed(3)})`);
  else await dawdle(sql);
  for (const key of keys) {
    const value = seen.get(key) as number;
    if (mode === 'exclusive') {
      await sql('UPDATE chaos_counters SET value = $1::text::int WHERE key = $2::text', [
        String(value + 1),
        key,
      ]);
    }
    await sql(
      `INSERT INTO chaos_sections (worker, key, mode, scope, entered, exited, seen)
       VALUES ($1::text, $2::text, $3::text, 'transaction', $4::text::timestamptz, clock_timestamp(), $5::text::int)`,
      [worker, key, mode, String(entry?.at), String(value)],
    );
  }
  if (idleLast && Math.random() < 0.5) await sleep(random(15));
  stats.completed++;
}

// One statement (autocommit), recording the section only if the holder's backend still holds the lock
// at its end: the clock is read first (a materialized CTE), then `pg_locks`, in a subplan per row of
// it. A leader that lost its lock (backend terminated) records nothing. It writes no counter: a write
// on another connection than the lock's cannot be fenced by the lock (the holder may be terminated
// between this check and the commit), and that is no fault of the lock library.
const SESSION_RECORD = `WITH t AS MATERIALIZED (SELECT clock_timestamp() AS at)
  INSERT INTO chaos_sections (worker, key, mode, scope, entered, exited, seen)
  SELECT $1::text, $2::text, 'exclusive', 'session', $3::text::timestamptz, t.at, $4::text::int FROM t
   WHERE EXISTS (
     SELECT 1 FROM pg_locks WHERE t.at IS NOT NULL AND locktype = 'advisory' AND granted AND mode = 'ExclusiveLock'
        AND pid = $5::text::int AND objsubid = 1 AND classid = $6::text::bigint::oid AND objid = $7::text::bigint::oid
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))
  RETURNING id`;

/** A section under a session lock held by backend `pid`, on the app's own (unpinned) connections. */
async function sessionSection(pid: number, key: string): Promise<boolean> {
  const sql = subject.query;
  const [entry] = await sql('SELECT clock_timestamp()::text AS at');
  const [row] = await sql('SELECT value FROM chaos_counters WHERE key = $1::text', [key]);
  await dawdle(sql);
  const value = BigInt.asUintN(64, (lockKey(key) as { value: bigint }).value);
  const written = await sql(SESSION_RECORD, [
    worker,
    key,
    String(entry?.at),
    String(Number(row?.value)),
    String(pid),
    String(value >> 32n),
    String(value & 0xffffffffn),
  ]);
  if (written.length === 1) stats.completed++;
  return written.length === 1;
}

/** What a leader does while it holds the lock: a few ticks, each a section, stopping when it is lost. */
async function lead(handle: SessionLock, key: string, ticks: number): Promise<void> {
  if (lane === 'pgbouncer') {
    // Granted through a transaction-mode pooler: another backend may hold the same lock.
    stats.poolerSessionLocks++;
    await handle.release().catch(() => undefined);
    return;
  }
  stats.sessionHeld++;
  let lost = false;
  try {
    for (let tick = 0; tick < ticks && !lost; tick++) {
      lost = handle.signal.aborted || !(await sessionSection(handle.pid, key));
      if (!lost) await sleep(random(20));
    }
  } finally {
    const released = await handle.release().then(
      () => true,
      (error: unknown) => {
        if (!LockLostError.is(error)) throw error;
        return false;
      },
    );
    if (lost || !released) stats.sessionLost++;
  }
}

const session = subject.session;
const heartbeatMs = 200;

/** A standby's try loop: a few tries a little apart, leading when one wins. */
async function leader(key: string): Promise<void> {
  for (let attempt = 0; attempt < 4; attempt++) {
    const handle = await session?.tryAcquireSessionLock(key, { heartbeatMs });
    if (handle) return lead(handle, key, 1 + random(3));
    stats.busy++;
    await sleep(10 + random(30));
  }
}

/** A standby that waits (bounded) for the lock, then leads. */
async function standby(key: string): Promise<void> {
  const handle = await session?.acquireSessionLock(key, { timeoutMs: 20 + random(200), heartbeatMs });
  if (handle) await lead(handle, key, 1 + random(2));
}

// A run that throws after writing its row (its row must roll back, and the period stay open).
class Doomed extends Error {}

/**
 * One runOnce call: the job writes its row for the period, dawdles, and now and then throws, or (one
 * in ten) outstays its `maxRunMs`: in a statement pglock must cancel, or in JavaScript that ignores
 * its signal. Either way its row must roll back.
 */
async function job(): Promise<void> {
  const { name, per } = pick(chaosJobs);
  const overrun = Math.random() < 0.1 ? (Math.random() < 0.5 ? 'statement' : 'javascript') : undefined;
  const doomed = overrun !== undefined || Math.random() < 0.1;
  try {
    const options = overrun === undefined ? { per } : { per, maxRunMs: 40 };
    const result = await subject.runOnce(name, options, async (lockSql, period) => {
      const sql = traced(lockSql);
      await sql(
        `INSERT INTO chaos_job_runs (worker, name, period_start, period_end, doomed)
         VALUES ($1::text, $2::text, $3::text::timestamptz, $4::text::timestamptz, $5::text::boolean)`,
        [worker, name, period.start.toISOString(), period.end.toISOString(), String(doomed)],
      );
      if (overrun === 'statement') await sql('SELECT 1 AS one FROM pg_sleep(0.2)');
      else if (overrun === 'javascript') await sleep(200);
      else if (idleLast) await sql(`SELECT 1 AS one FROM pg_sleep(${(Math.random() * 0.015).toFixed(3)})`);
      else await dawdle(sql);
      // An overrun's job is over already (its call answered JobTimedOutError): it just ends.
      if (doomed && overrun === undefined) throw new Doomed('doomed run');
    });
    if (result.ran) stats.jobsRan++;
    else if (result.reason === 'done') stats.jobsDone++;
    else stats.jobsBusy++;
  } catch (error) {
    if (overrun !== undefined && JobTimedOutError.is(error)) stats.jobsTimedOut++;
    else if (error instanceof Doomed) stats.jobsThrown++;
    else throw error;
  }
}

// A tick counts only if, after its clock was read, the backend that wrote the term (logged by the
// trigger on pglock_jobs) still held the name's lock and the term was still the latest: then the lock
// was held from the election to the tick. It runs on the app's pool, not the lock's connection.
const VERIFIED_TICK = `WITH t AS MATERIALIZED (SELECT clock_timestamp() AS at)
  INSERT INTO chaos_leader_ticks (name, term, campaign, at)
  SELECT $1::text, $2::text::bigint, $3::text, t.at FROM t
   WHERE EXISTS (
     SELECT 1 FROM chaos_elections e JOIN pg_locks l ON l.pid = e.pid
      WHERE t.at IS NOT NULL AND e.name = $1::text AND e.term = $2::text::bigint
        AND l.locktype = 'advisory' AND l.granted AND l.mode = 'ExclusiveLock' AND l.objsubid = 1
        AND l.classid = ((e.key >> 32) & 4294967295)::oid AND l.objid = (e.key & 4294967295)::oid
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
     AND (SELECT term FROM pglock_jobs WHERE name = $1::text AND namespace IS NULL) = $2::text::bigint
  RETURNING id`;

// The fencing guard: accepted only while no later term has written; each accepted write is logged.
const FENCED_WRITE = `WITH w AS (
    INSERT INTO chaos_fence AS f (name, term) VALUES ($1::text, $2::text::bigint)
    ON CONFLICT (name) DO UPDATE SET term = excluded.term WHERE f.term <= excluded.term
    RETURNING term)
  INSERT INTO chaos_fenced_writes (name, term, campaign) SELECT $1::text, term, $3::text FROM w
  RETURNING id`;

let campaignCount = 0;

/** A leader campaign for a while: each term ticks until its signal aborts or a fenced write is refused. */
async function campaign(): Promise<void> {
  if (!session) return;
  const name = pick(chaosLeaders);
  const id = `${worker}/${campaignCount++}`;
  stats.campaigns++;
  const running = session.leader(name, {
    heartbeatMs,
    // Shorter than the longest freeze (1.5 s): a frozen leader's term ends by its lease, a standby is
    // elected meanwhile, and its fenced writes on waking are refused.
    leaseMs: 1_000,
    retryMs: 20,
    onElected: async ({ term, signal }) => {
      if (lane === 'pgbouncer') {
        // Elected through a transaction-mode pooler: another backend may hold the same lock.
        stats.poolerSessionLocks++;
        return;
      }
      stats.terms++;
      const values = [name, String(term), id];
      while (!signal.aborted) {
        const accepted = await subject.query(FENCED_WRITE, values);
        if (accepted.length === 0) {
          stats.fencedRefused++;
          return;
        }
        await subject.query(VERIFIED_TICK, values);
        await sleep(random(25));
      }
      if (LockLostError.is(signal.reason)) stats.termsLost++;
    },
    onError: (error) => {
      if (lane === 'pgbouncer' && LockUsageError.is(error)) stats.leaderRefused++;
      else {
        stats.errors++;
        evidence.note(error);
      }
    },
  });
  await sleep(200 + random(1_000));
  await running.stop();
}

type Kind =
  | 'exclusive'
  | 'shared'
  | 'try'
  | 'timeout'
  | 'multi'
  | 'runOnce'
  | 'leader'
  | 'standby'
  | 'campaign';
const kinds: readonly Kind[] = [
  'exclusive',
  'shared',
  'try',
  'timeout',
  'multi',
  'runOnce',
  ...(session ? (['leader', 'standby', 'campaign'] as const) : []),
];

async function run(kind: Kind): Promise<void> {
  const key = pick(chaosKeys);
  if (kind === 'exclusive') await subject.withLock(key, (sql) => section(sql, [key], 'exclusive'));
  else if (kind === 'shared') {
    await subject.withLock(key, (sql) => section(sql, [key], 'shared'), { shared: true });
  } else if (kind === 'try') {
    const result = await subject.tryWithLock(key, (sql) => section(sql, [key], 'exclusive'));
    if (!result.acquired) stats.busy++;
  } else if (kind === 'timeout') {
    const timeoutMs = 5 + random(100);
    await subject.withLock(key, (sql) => section(sql, [key], 'exclusive'), { timeoutMs });
  } else if (kind === 'runOnce') {
    await job();
  } else if (kind === 'campaign') {
    await campaign();
  } else if (kind === 'multi') {
    const other = pick(chaosKeys.filter((k) => k !== key));
    await subject.withLock([key, other], (sql) => section(sql, [key, other], 'exclusive'));
  } else {
    try {
      await (kind === 'leader' ? leader(key) : standby(key));
    } catch (error) {
      // Through a transaction-mode pooler this is the expected answer, and nothing was held.
      if (lane === 'pgbouncer' && LockUsageError.is(error)) stats.sessionRefused++;
      else throw error;
    }
  }
}

async function step(): Promise<void> {
  const kind = pick(kinds);
  failedStatements = [];
  inFlight.clear();
  const watchdog = setTimeout(() => {
    const unflushed = watch?.unflushed() ?? [];
    const closedConnections = watch?.lastBeforeClose() ?? [];
    const upstream = strandedByUpstream();
    process.stderr.write(
      `step ${kind} stuck for 10 s (${openCalls()}; ${openStatements()})${unflushed.length ? `; never flushed: ${unflushed.join('; ')}` : ''}${closedConnections.length ? `; ${closedConnections.join('; ')}` : ''}\n`,
    );
    if (upstream) {
      // Named, and the worker ends: the controller reports it as an excused hang (and restarts the
      // worker while there is time). Every section before it is recorded already.
      say({ event: 'stats', ...stats });
      process.stderr.write(`STRANDED ${upstream}\n`);
      process.exit(4);
    }
  }, 10_000);
  try {
    await run(kind);
  } finally {
    clearTimeout(watchdog);
  }
}

say({ event: 'ready', pid: process.pid });
const deadline =
  deadlineText === 'stdin'
    ? Number((await createInterface({ input: process.stdin })[Symbol.asyncIterator]().next()).value)
    : Number(deadlineText);
const report = setInterval(() => say({ event: 'stats', ...stats }), 250);
while (Date.now() < deadline) {
  try {
    await step();
  } catch (error) {
    if (LockNotAcquiredError.is(error)) stats.timedOut++;
    else {
      stats.errors++;
      evidence.note(error);
      if (process.env.CHAOS_VERBOSE) process.stderr.write(`error: ${String(error)}\n`);
      // A connection that just died is replaced by the pool on the next call; do not spin on it.
      await sleep(20);
    }
  }
}
clearInterval(report);
say({ event: 'done', ...stats });
const closing = setTimeout(() => {
  const unflushed = watch?.unflushed() ?? [];
  process.stderr.write(
    `close() stuck for 5 s (${subject.poolState()}${unflushed.length ? `; never flushed: ${unflushed.join('; ')}` : ''}; ${evidence.explain()})\n`,
  );
  // Every section is done and reported: the controller records this as a teardown finding. Left
  // running, a client whose end() never settles (postgres.js waits for every query and reserved
  // connection first) kept the process alive until it was killed as "hung".
  process.exit(3);
}, 5_000);
await subject.close().catch(() => undefined);
clearTimeout(closing);
