import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  addStats,
  type ChaosLane,
  chaosJobs,
  chaosJobsSchema,
  chaosKeys,
  chaosSchema,
  statsOf,
  type WorkerStats,
  zeroStats,
} from './chaos-schema.ts';
import { checkHistory, type HistoryReport, type SectionRow } from './history.ts';
import { LeakScan, startPoolerLane } from './pooler-lane.ts';
import { type FatalWrite, handedWhileOpen, ormOwnEnd } from './postgres-js-writes.ts';
import { readSchedules, type ScheduleReport } from './read-schedules.ts';
import { type SubjectDefinition, subjects } from './subjects.ts';

const workerPath = fileURLToPath(new URL('./chaos-worker.ts', import.meta.url));

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /** A superuser URL of the server; the run creates (and drops) a database of its own there. */
  readonly url: string;
  /** How long workers take locks while the controller kills and terminates. */
  readonly seconds: number;
  /** Worker processes straight to PostgreSQL, spread over every subject in turn (at least one each). */
  readonly processes?: number;
  /**
   * Worker processes through a PgBouncer in transaction mode that the run starts (default: one per
   * subject; 0 for none). Skipped, with the reason in the result, when PgBouncer is not installed.
   */
  readonly poolerProcesses?: number;
  /** False for a baseline run without kills and terminations. */
  readonly faults?: boolean;
  /** Only these subjects (default: every one in {@link subjects}), e.g. to chase one adapter's crash. */
  readonly subjects?: readonly string[] | undefined;
  /** Keep the run's database when the checker found a violation, to study its rows (it logs the name). */
  readonly keepOnViolation?: boolean | undefined;
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

/** The counts a run prints; `violations` (of the checker), `hung` and unexpected crashes must be zero. */
export interface ChaosResult extends HistoryReport, WorkerStats {
  readonly kills: number;
  readonly terminations: number;
  /**
   * Workers frozen with SIGSTOP for 0.3–1.5 s, then resumed with SIGCONT: a GC pause or a stuck
   * event loop. A frozen leader's term must end by its lease (its standby is elected meanwhile), and
   * its writes on waking must be refused by the fence.
   */
  readonly freezes: number;
  /** Workers that had not finished 20 s after the deadline (a call that never returned). */
  readonly hung: number;
  /** The hung workers: subject, lane and the end of their stderr. */
  readonly hungAdapters: readonly string[];
  /** Respawned workers still starting (importing their ORM) at the end: killed, never in a call. */
  readonly slowStarts: readonly string[];
  /** Worker exits the controller did not cause (an uncaught error), each with its verdict. */
  readonly crashes: readonly ChaosCrash[];
  /**
   * Workers that finished every section (and reported them) but whose pool did not close within 5 s
   * afterwards: an open teardown finding, printed, not a lock failure (the history checks it all).
   */
  readonly teardowns: readonly string[];
  /**
   * Calls stuck 10 s that the worker's evidence pins on a named upstream bug (the ORM's ROLLBACK
   * stranded in postgres.js's queue of a connection that closed, porsager/postgres#1186): the worker
   * ends itself and is restarted; printed by name, not counted as hung. A stuck call without that
   * evidence stays a hang.
   */
  readonly strandedCalls: readonly string[];
  /** Per subject and lane (`kysely-pg`, `kysely-pg via pgbouncer`): sections completed. */
  readonly byAdapter: Readonly<Record<string, number>>;
  /** The pooler lane's worker count, or why it did not run. */
  readonly pooler: { readonly processes: number } | { readonly skipped: string };
  /** The runOnce and leader history (its violations are in `violations` too). */
  readonly schedules: ScheduleReport;
  readonly seconds: number;
}

/** A worker that died of an uncaught error. */
export interface ChaosCrash {
  readonly adapter: string;
  readonly stderr: string;
  /**
   * Why the crash does not fail the run, when it is excused: only a postgres.js write-timer crash
   * whose fatal write was the ORM's own COMMIT/ROLLBACK (porsager/postgres #1208). `undefined` fails it.
   */
  readonly knownBug: string | undefined;
  /** For a postgres.js write-timer crash: the write that threw, as the worker's watch saw it. */
  readonly fatalWrite?: FatalWrite | undefined;
}

interface Slot {
  readonly subject: SubjectDefinition;
  readonly lane: ChaosLane;
  readonly url: string;
  readonly id: string;
  child: ChildProcess | undefined;
  /** The latest stats of the current process, and the sum over the slot's earlier (dead) processes. */
  current: WorkerStats;
  past: WorkerStats;
  done: boolean;
  ready: boolean;
  killedByUs: boolean;
  stderr: string;
  /** When the current process was spawned, and when it last reported (ms since the epoch). */
  spawnedAt: number;
  heardAt: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const label = (slot: Slot): string =>
  slot.lane === 'direct' ? slot.subject.name : `${slot.subject.name} via pgbouncer`;

/**
 * Runs worker processes of every subject against a fresh database, straight and through PgBouncer in
 * transaction mode, while SIGKILLing workers and terminating their backends at random; then checks
 * the recorded history with {@link checkHistory}.
 *
 * @example
 * ```ts
 * const result = await runChaos({ url: process.env.DATABASE_URL!, seconds: 20 });
 * console.log(result.sections, result.kills, result.terminations, result.violations.length);
 * ```
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => undefined);
  const database = `pglock_chaos_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: options.url, application_name: 'pglock-chaos-admin' });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  const runUrl = new URL(options.url);
  runUrl.pathname = `/${database}`;
  const db = new pg.Client({ connectionString: runUrl.href, application_name: 'pglock-chaos-controller' });
  const chosen = subjects.filter((s) => options.subjects?.includes(s.name) ?? true);
  if (chosen.length === 0) throw new Error(`no subject among ${options.subjects?.join(', ')}`);
  const poolerProcesses = options.poolerProcesses ?? chosen.length;
  const lane = poolerProcesses > 0 ? await startPoolerLane(runUrl.href) : 'poolerProcesses is 0';
  let keep = false;
  try {
    await db.connect();
    await db.query(chaosSchema);
    await db.query(chaosJobsSchema);
    await db.query('INSERT INTO chaos_counters SELECT unnest($1::text[]), 0', [[...chaosKeys]]);
    const poolerLane = typeof lane === 'string' ? lane : { ...lane, poolerProcesses };
    const result = await drive(options, chosen, runUrl.href, db, poolerLane, log);
    keep = options.keepOnViolation === true && result.violations.length > 0;
    if (keep) log(`chaos: kept database ${database} (violations)`);
    return result;
  } finally {
    if (typeof lane !== 'string') await lane.stop();
    await db.end().catch(() => undefined);
    if (!keep) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

type Lane = Exclude<Awaited<ReturnType<typeof startPoolerLane>>, string> & {
  readonly poolerProcesses: number;
};

async function drive(
  options: ChaosOptions,
  chosen: readonly SubjectDefinition[],
  url: string,
  db: pg.Client,
  lane: Lane | string,
  log: (line: string) => void,
): Promise<ChaosResult> {
  const count = Math.max(options.processes ?? chosen.length, chosen.length);
  const pooled = typeof lane === 'string' ? 0 : lane.poolerProcesses;
  // Set once every worker has imported its ORM (tsx transpiles on first start: seconds on 2 cores).
  let started = Number.POSITIVE_INFINITY;
  let deadline = Number.POSITIVE_INFINITY;
  const crashes: ChaosCrash[] = [];
  const teardowns: string[] = [];
  const strandedCalls: string[] = [];
  const slot = (i: number, laneName: ChaosLane, laneUrl: string): Slot => ({
    subject: chosen[i % chosen.length] as SubjectDefinition,
    lane: laneName,
    url: laneUrl,
    id: `${laneName === 'direct' ? 'w' : 'b'}${i}`,
    child: undefined,
    current: zeroStats(),
    past: zeroStats(),
    done: false,
    ready: false,
    killedByUs: false,
    stderr: '',
    spawnedAt: 0,
    heardAt: 0,
  });
  const slots: Slot[] = [
    ...Array.from({ length: count }, (_, i) => slot(i, 'direct', url)),
    ...Array.from({ length: pooled }, (_, i) => slot(i, 'pgbouncer', (lane as Lane).url)),
  ];
  const exits: Promise<void>[] = [];
  const spawnWorker = (slot: Slot): void => {
    slot.past = addStats(slot.past, slot.current);
    slot.current = zeroStats();
    slot.killedByUs = false;
    slot.ready = false;
    slot.stderr = '';
    slot.spawnedAt = slot.heardAt = Date.now();
    const child = spawn(
      process.execPath,
      [
        '--conditions=@pglock/source',
        '--import',
        'tsx',
        workerPath,
        slot.subject.name,
        slot.lane,
        slot.id,
        Number.isFinite(deadline) ? String(deadline) : 'stdin',
      ],
      { env: { ...process.env, DATABASE_URL: slot.url }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    slot.child = child;
    child.stderr?.on('data', (chunk) => {
      slot.stderr = (slot.stderr + String(chunk)).slice(-4_000);
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const event = parse(line);
      slot.heardAt = Date.now();
      if (event?.event === 'stats' || event?.event === 'done') slot.current = statsOf(event);
      if (event?.event === 'ready') slot.ready = true;
      if (event?.event === 'done') slot.done = true;
    });
    exits.push(
      new Promise((resolve) =>
        child.once('exit', (code, signal) => {
          const stranded = /^STRANDED (.*)$/m.exec(slot.stderr)?.[1];
          if (!slot.killedByUs && code !== 0) {
            if (slot.done && /close\(\) stuck/.test(slot.stderr))
              teardowns.push(`${label(slot)}: ${slot.stderr.trim()}`);
            else if (code === 4 && stranded) strandedCalls.push(`${label(slot)}: ${stranded}`);
            else crashes.push(verdict(label(slot), `exit ${code ?? signal}: ${slot.stderr}`));
          }
          // A worker started in the last seconds would spend them importing its ORM: not worth it.
          if (!slot.done && Date.now() < deadline - 3_000) setTimeout(() => spawnWorker(slot), 50);
          resolve();
        }),
      ),
    );
  };
  for (const slot of slots) spawnWorker(slot);
  const startBy = Date.now() + 120_000;
  while (!slots.every((slot) => slot.ready)) {
    if (Date.now() > startBy || crashes.length > 0) {
      for (const slot of slots) slot.child?.kill('SIGKILL');
      throw new Error(`chaos workers did not start: ${JSON.stringify(crashes)}`);
    }
    await sleep(50);
  }
  started = Date.now();
  deadline = started + options.seconds * 1_000;
  for (const slot of slots) slot.child?.stdin?.end(`${deadline}\n`);

  let kills = 0;
  let terminations = 0;
  let freezes = 0;
  let lastFreeze = Date.now();
  const frozen = new Set<Slot>();
  const leaks = new LeakScan();
  await sleep(500);
  while (Date.now() < deadline - 500) {
    await sleep(100 + Math.random() * 300);
    if (typeof lane !== 'string') await leaks.scan(db, await lane.serverPids());
    if (options.faults === false) continue;
    // A freeze every 2 s (time-based, so that a slow machine's run has them too), else a kill or a
    // termination.
    if (Date.now() - lastFreeze > 2_000) {
      lastFreeze = Date.now();
      const slot = slots[Math.floor(Math.random() * slots.length)] as Slot;
      const child = slot.child;
      if (child && child.exitCode === null && slot.ready && !slot.done && !frozen.has(slot)) {
        frozen.add(slot);
        child.kill('SIGSTOP');
        freezes++;
        // Resumed before the faults stop, so that every worker reaches its deadline on time.
        const ms = Math.min(300 + Math.random() * 1_200, Math.max(0, deadline - 600 - Date.now()));
        setTimeout(() => {
          frozen.delete(slot);
          if (child.exitCode === null) child.kill('SIGCONT');
        }, ms);
      }
    } else if (Math.random() < 0.25) {
      const slot = slots[Math.floor(Math.random() * slots.length)] as Slot;
      if (slot.child && slot.child.exitCode === null && slot.ready && !slot.done) {
        slot.killedByUs = true;
        slot.child.kill('SIGKILL');
        kills++;
      }
    } else {
      // Prefer a backend inside a section (holding an advisory lock), else any worker backend; spare
      // a suspected leak on the pooler, so that the scan can confirm it.
      const { rows } = await db.query<{ pid: number }>(
        `SELECT a.pid FROM pg_stat_activity a
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
            AND NOT a.pid = ANY($1::int[])
          ORDER BY EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted) DESC,
                   random() LIMIT 1`,
        [leaks.suspectPids()],
      );
      if (rows[0]) {
        const [row] = (await db.query('SELECT pg_terminate_backend($1) AS ok', [rows[0].pid])).rows;
        if (row?.ok) terminations++;
      }
    }
  }
  while (frozen.size > 0) await sleep(20);
  log(`chaos: faults stopped after ${((Date.now() - started) / 1000).toFixed(1)} s; waiting for workers`);

  const slowStarts: string[] = [];
  const hungAdapters = await waitForWorkers(slots, exits, deadline, deadline + 20_000, slowStarts);
  // The pooler keeps its server connections: once the workers are gone they must hold nothing.
  const poolerPids = typeof lane === 'string' ? [] : await lane.serverPids();
  await waitForBackends(db, poolerPids);
  const held = (
    await db.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory'
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    )
  ).rows;
  for (const { pid } of held.filter((row) => poolerPids.includes(row.pid))) {
    leaks.add(`backend ${pid} of the pooler still holds an advisory lock after every worker ended`);
  }
  const sections = (
    await db.query(
      `SELECT id::int AS id, worker, key, mode, scope, seen,
              (extract(epoch FROM entered) * 1000000)::bigint::text AS entered,
              (extract(epoch FROM exited) * 1000000)::bigint::text AS exited
         FROM chaos_sections`,
    )
  ).rows.map((row): SectionRow => ({ ...row, entered: BigInt(row.entered), exited: BigInt(row.exited) }));
  const counters = (await db.query('SELECT key, value FROM chaos_counters')).rows;
  const totals = slots.reduce((sum, slot) => addStats(sum, addStats(slot.past, slot.current)), zeroStats());
  const report = checkHistory({
    sections,
    counters,
    heldLocks: held.length,
    poolerSessionLocks: totals.poolerSessionLocks,
    poolerLeaks: leaks.found(),
  });
  const schedules = await readSchedules(db, (name) => chaosJobs.find((job) => job.name === name)?.per ?? 0);
  const byAdapter: Record<string, number> = {};
  for (const slot of slots) {
    byAdapter[label(slot)] = (byAdapter[label(slot)] ?? 0) + slot.past.completed + slot.current.completed;
  }
  return {
    ...report,
    violations: [...report.violations, ...schedules.violations],
    ...totals,
    kills,
    terminations,
    freezes,
    hung: hungAdapters.length,
    hungAdapters,
    slowStarts,
    crashes,
    teardowns,
    strandedCalls,
    byAdapter,
    pooler: typeof lane === 'string' ? { skipped: lane } : { processes: pooled },
    schedules,
    seconds: options.seconds,
  };
}

/**
 * The verdict on a crash. Excused are only postgres.js bugs whose fatal statement no lock library
 * sends on a connection it could know was closed, each named in the report:
 * - its write timer (a write to a connection that had closed, porsager/postgres #1208) where the
 *   fatal write was the ORM's own COMMIT/ROLLBACK, or where every other statement of it was handed
 *   to the connection while it was open (the close came between the hand-off and the timer: no
 *   caller can see that gap);
 * - the same timer where the fatal write is the first statement a new holder sends on a connection
 *   the pool handed out after it closed (dead since, never reconnected: porsager/postgres #1199):
 *   the ORM's `begin`, or the statement that starts a pglock pin or control connection.
 *   pglock never hands back a pinned or control connection that died; the ORM's own transaction does;
 * - the array-type fetch postgres.js runs on every new connection rejecting unhandled when the
 *   backend is terminated during startup (porsager/postgres #1192, #1223).
 * A write pglock sent otherwise, an unknown write, and every other crash fail the run.
 */
function verdict(adapter: string, stderr: string): ChaosCrash {
  const line = /^FATAL_WRITE (.*)$/m.exec(stderr)?.[1];
  const fatalWrite = line === undefined ? undefined : (parse(line) as unknown as FatalWrite | undefined);
  const timerCrash = /Cannot read properties of null \(reading 'write'\)/.test(stderr);
  const on = `on connection ${fatalWrite?.connection}`;
  const query = /^QUERY (.*)$/m.exec(stderr)?.[1] ?? '';
  let knownBug: string | undefined;
  if (timerCrash && ormOwnEnd(fatalWrite)) {
    knownBug = `postgres.js write timer on a closed connection (porsager/postgres #1208): the fatal write was the ORM's own ${fatalWrite?.statements.join(' + ')} ${on}${fatalWrite?.closedBefore ? ', reported closed before' : ''}`;
  } else if (timerCrash && handedWhileOpen(fatalWrite)) {
    knownBug = `postgres.js write timer on a closed connection (porsager/postgres #1208): every statement of the fatal write (${fatalWrite?.statements.join(' + ')}) was handed ${on} while it was open but the ORM's own COMMIT/ROLLBACK, and the connection closed ${fatalWrite?.closedMsBefore} ms before the timer wrote them`;
  } else if (timerCrash && handedOutDead(fatalWrite)) {
    knownBug = `postgres.js handed out a connection that had closed ${fatalWrite?.closedMsBefore} ms before (porsager/postgres #1199, #1208): the fatal write was its new holder's first statement, ${fatalWrite?.statements.join(' + ')} ${on}`;
  } else if (
    /UNCAUGHT .*CONNECTION_CLOSED|UNCAUGHT .*57P01|terminating connection/.test(stderr) &&
    /pg_catalog\.pg_type.*typarray/.test(query)
  ) {
    knownBug =
      'postgres.js array-type fetch at connect rejected unhandled after a termination (porsager/postgres #1192, #1223)';
  }
  return { adapter, stderr, knownBug, fatalWrite };
}

/**
 * What a new holder of a lent connection sends first: the ORM's `begin`; pglock's backend pid (a
 * session pin, a cancel) and its control statements (liveness, heartbeat, guarded cancel), each run
 * on a connection lent for that one statement.
 */
const firstStatements = [
  /^begin\s*;?$/i,
  /^SELECT pg_backend_pid\(\) AS pid$/,
  /^SELECT count\(\*\)::int AS alive FROM pg_stat_activity /,
  /^SELECT count\(\*\)::int AS held FROM pg_locks /,
  /^SELECT pg_cancel_backend\(pid\) AS cancelled FROM pg_stat_activity/,
];

/** The first statement of a connection's new holder, on a connection dead since it closed. */
function handedOutDead(write: FatalWrite | undefined): boolean {
  return (
    write?.closedBefore === true &&
    write.writtenSinceClose === false &&
    write.statements.length === 1 &&
    firstStatements.some((first) => first.test(write.statements[0] ?? ''))
  );
}

async function waitForWorkers(
  slots: readonly Slot[],
  exits: Promise<void>[],
  deadline: number,
  until: number,
  slowStarts: string[],
): Promise<string[]> {
  while (Date.now() < until) {
    const running = slots.filter(
      (slot) => slot.child && slot.child.exitCode === null && slot.child.signalCode === null,
    );
    if (running.length === 0) break;
    await sleep(100);
  }
  const hung: string[] = [];
  for (const slot of slots) {
    if (slot.child && slot.child.exitCode === null && slot.child.signalCode === null) {
      slot.killedByUs = true;
      slot.child.kill('SIGKILL');
      // Still importing its ORM (a respawn on a loaded machine): it never made a call to hang in.
      if (!slot.ready) {
        slowStarts.push(label(slot));
        continue;
      }
      const at = (time: number) => `${((time - deadline) / 1_000).toFixed(1)} s`;
      const state = slot.done ? 'after its last call' : 'in a call';
      // The worker's own account of the stuck step, whole, else the end of its stderr.
      const stuck = slot.stderr.split('\n').findLast((line) => / stuck for /.test(line));
      hung.push(
        `${label(slot)} (${state}; spawned at ${at(slot.spawnedAt)}, last heard at ${at(slot.heardAt)} from the deadline: ${stuck?.slice(0, 1_500) ?? slot.stderr.trim().slice(-300)})`,
      );
    }
  }
  await Promise.all(exits);
  return hung;
}

// Backends of killed processes end once PostgreSQL notices the closed socket; give them a moment.
// The pooler's own server connections stay until the pooler stops.
async function waitForBackends(db: pg.Client, poolerPids: readonly number[]): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
          AND NOT pid = ANY($1::int[])`,
      [[...poolerPids]],
    );
    if (rows[0]?.n === 0) return;
    await sleep(100);
  }
}

function parse(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
