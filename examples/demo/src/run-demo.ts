// The controller: creates the run's schema, starts the instances, kills the leader halfway while it
// holds the rebuild lock, waits for the rest, then verifies against the database and draws the timeline.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { generateClient } from './generate-client.ts';
import { Instance, type InstanceState } from './instances.ts';
import { LiveView } from './live-view.ts';
import type { DemoOptions } from './options.ts';
import { DIGEST_CRON, DIGEST_JOB, REBUILD_LOCK, SCHEDULER } from './protocol.ts';
import { createSchema } from './setup.ts';
import { writeTimeline } from './timeline.ts';
import { type KillRecord, type Verification, verify } from './verify.ts';

export interface DemoResult {
  readonly verification: Verification;
  readonly instances: readonly InstanceState[];
  readonly timeline: string;
}

export interface RunContext {
  readonly url: string;
  /** Where the database came from, for the title line. */
  readonly database: string;
  readonly out: NodeJS.WriteStream;
  /** Aborted on Ctrl+C: the instances are killed and the schema dropped. */
  readonly signal: AbortSignal;
}

const READY_TIMEOUT_MS = 120_000;
/**
 * The kill comes this long after the victim reports it holds the rebuild lock: well inside the
 * rebuild (which sleeps 400 ms after reporting), and late enough for the cut bar to show on the timeline.
 */
const KILL_DELAY_MS = 150;
/** How long instances may take past the end to finish their last transaction. */
const GRACE_MS = 30_000;
/** The digest job's period, and how often each instance fires it (far more often, on purpose). */
const DIGEST_PER_MS = 1_000;
const DIGEST_EVERY_MS = 150;
/** From the kill time on, the leader is asked to rebuild now (again after this long, should it not get to). */
const NUDGE_EVERY_MS = 2_500;

/** Runs the whole demo once and returns the verification; never throws for a failed check. */
export async function runDemo(options: DemoOptions, context: RunContext): Promise<DemoResult> {
  const { out, signal } = context;
  const run = randomUUID().replaceAll('-', '').slice(0, 8);
  const schema = `pglock_demo_${run}`;
  const namespace = `pglock-demo/${run}`;
  const adapters = Array.from(
    { length: options.instances },
    (_, i) => options.adapters[i % options.adapters.length]!,
  );
  const admin = new pg.Client({ connectionString: context.url, application_name: 'pglock-demo controller' });
  await admin.connect();
  const instances: Instance[] = [];
  try {
    await createSchema(admin, schema, options.users);
    if (adapters.includes('prisma')) {
      await generateClient(() => out.write('Preparing the Prisma client…\n'));
    }
    adapters.forEach((adapter, i) => {
      instances.push(
        new Instance({
          index: i + 1,
          label: `#${i + 1} ${adapter}`,
          adapter,
          url: context.url,
          schema,
          namespace,
          users: options.users,
          lock: options.lock,
          rebuildHoldMs: 400,
          rebuildEveryMs: 250,
          thinkMs: 10,
          digestEveryMs: DIGEST_EVERY_MS,
          digestPerMs: DIGEST_PER_MS,
          tickMs: 100,
        }),
      );
    });
    out.write(
      `Starting ${instances.length} instances (${[...new Set(adapters)].join(', ')}) in schema ${schema}.\n` +
        `Each rebuilds the leaderboard with tryWithLock('${REBUILD_LOCK}') and adds points with\n` +
        `withLock('user:<id>') (read, sleep, write), fires runOnce('${DIGEST_JOB}', { cron: '${DIGEST_CRON}' })\n` +
        `every ~${DIGEST_EVERY_MS} ms and campaigns with leader('${SCHEDULER}'); the leader runs the scheduler.\n` +
        `${options.kill ? 'Halfway the leader is SIGKILLed mid-rebuild.\n' : ''}\n`,
    );
    await Promise.race([
      Promise.all(instances.map((instance) => instance.ready)),
      rejectAfter(READY_TIMEOUT_MS, 'the instances were not ready in time'),
      aborted(signal),
    ]);

    const t0 = Date.now();
    const endAt = t0 + options.seconds * 1_000;
    const killAt = t0 + options.seconds * 500;
    const states = instances.map((instance) => instance.state);
    const clock = (at = Date.now()) => `t=${((at - t0) / 1000).toFixed(2)}s`;
    const view = new LiveView(
      out,
      states,
      () =>
        `pglock demo  ${Date.now() < endAt ? `${clock()} of ${options.seconds}s` : 'finishing'}  ${context.database}${options.lock ? '' : '  --no-lock'}  (* leader)`,
    );
    let killing = false;
    let kill: KillRecord | undefined;
    let recovered = false;
    let killDone: Promise<void> = Promise.resolve();
    // The leader as the instances report it (onElected ran, its term has not ended).
    let leader: Instance | undefined;
    let failedOver = false;
    let nudged: { instance: Instance; at: number } | undefined;
    // From the kill time, the leader rebuilds at once (waiting for the lock): the kill below then
    // takes the leader mid-rebuild, so one SIGKILL tests the rebuild's rollback and the failover.
    const nudge = setInterval(() => {
      if (!options.kill || killing || Date.now() < killAt || !leader) return;
      if (nudged?.instance === leader && Date.now() - nudged.at < NUDGE_EVERY_MS) return;
      nudged = { instance: leader, at: Date.now() };
      leader.send({ type: 'rebuild-now' });
    }, 50);
    for (const instance of instances) {
      instance.onLeadership = (term, at, elected) => {
        if (!elected) {
          if (leader === instance) leader = undefined;
          return;
        }
        leader = instance;
        if (Date.now() > endAt) return; // the campaigns resigning at the end
        const after = kill && !failedOver ? `, ${Math.round(at - kill.at)} ms after the kill` : '';
        if (kill) failedOver = true;
        view.log(`${clock(at)}  ${instance.state.label} elected leader (term ${term})${after}`);
      };
      instance.onRebuildHeld = (rebuildId, at) => {
        if (kill && !recovered) {
          recovered = true;
          view.log(
            `${clock(at)}  ${instance.state.label} holds the rebuild lock, ${Math.round(at - kill.at)} ms after the kill`,
          );
        }
        if (!options.kill || killing || Date.now() < killAt || instance !== leader) return;
        killing = true;
        // The server's clock first, then the kill: recovery is measured from no later than the kill.
        killDone = delay(KILL_DELAY_MS)
          .then(() => admin.query<{ at: Date }>('SELECT clock_timestamp() AS at'))
          .then(({ rows }) => {
            const killedAt = Date.now();
            const term = instance.state.term;
            instance.kill(killedAt);
            kill = { label: instance.state.label, rebuildId, at: killedAt, serverAt: rows[0]!.at, term };
            view.log(
              `${clock(killedAt)}  SIGKILL ${instance.state.label}, the leader (term ${term}), while it holds the rebuild lock (rebuild ${rebuildId})`,
            );
          });
      };
    }
    for (const instance of instances) instance.start(endAt);
    view.start();
    const stragglers = setTimeout(
      () => {
        for (const instance of instances) instance.abort();
      },
      endAt - Date.now() + GRACE_MS,
    );
    const onAbort = () => {
      for (const instance of instances) instance.abort();
    };
    signal.addEventListener('abort', onAbort);
    await Promise.all(instances.map((instance) => instance.exited));
    clearTimeout(stragglers);
    clearInterval(nudge);
    signal.removeEventListener('abort', onAbort);
    view.stop();
    if (signal.aborted) throw signal.reason;

    await killDone;
    const crashed = states.filter((s) => s.status === 'failed');
    for (const s of crashed) out.write(`\n${s.label} exited with ${s.exitCode}:\n${s.output}\n`);
    for (const s of states) for (const error of s.leaderErrors) out.write(`\n${s.label} leader: ${error}\n`);
    const verification = await verify(admin, {
      schema,
      namespace,
      users: options.users,
      skips: states.reduce((n, s) => n + s.skips, 0),
      kill,
      crashed: crashed.map((s) => s.label),
      digestPerMs: DIGEST_PER_MS,
      leaderErrors: states.flatMap((s) => s.leaderErrors.map((error) => `${s.label}: ${error}`)),
    });
    const timeline = await writeTimeline(options.out, {
      title: `pglock demo: ${instances.length} instances, ${options.seconds} s${options.lock ? '' : ' (--no-lock)'}`,
      t0,
      t1: Math.max(endAt, ...instances.flatMap((i) => i.holds.map((h) => h.to))),
      instances: states,
      holds: instances.flatMap((instance) => instance.holds),
      terms: instances.flatMap((instance) => instance.terms),
      runs: instances.flatMap((instance) => instance.runs),
      kill,
      summary: verificationLines(verification),
    });
    return { verification, instances: states, timeline };
  } finally {
    for (const instance of instances) instance.abort();
    await Promise.all(instances.map((instance) => instance.exited));
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

/** The verification as aligned text lines (terminal and the timeline page). */
export function verificationLines(v: Verification): string[] {
  const lines = v.checks.map((check) => {
    const status = check.ok === undefined ? '' : check.ok ? 'ok' : 'FAIL';
    return `  ${check.label.padEnd(40)}${check.value.padStart(9)}  ${(check.rule ?? '').padEnd(18)}${status}`;
  });
  const by = Object.entries(v.rebuildsByInstance)
    .map(([label, n]) => `${label} ${n}`)
    .join(', ');
  return [
    'Verification (read back from the database)',
    ...lines,
    `  rebuilds by instance: ${by || 'none'}`,
    v.ok ? 'PASS: every check holds.' : 'FAIL: see the checks marked FAIL above.',
  ];
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function rejectAfter(ms: number, message: string): Promise<never> {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(message)), ms).unref());
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
