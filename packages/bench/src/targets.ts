import { ORDER_TOLERANCE_US } from './hand-off.ts';
import { overloaded } from './machine.ts';
import type { OverheadRow } from './overhead.ts';
import type { PgbenchResult } from './pgbench.ts';
import type { ScenarioResults, SharedResults } from './report.ts';
import { SCENARIO } from './scenario-names.ts';

/**
 * One target of the performance issue and what one Node.js line's run found: `met` / `missed`, `not
 * judged` when the machine's load exceeded its cores during the scenario (the figures are shown,
 * not judged), or `reported` for a figure with no target on this line.
 */
export interface TargetResult {
  readonly target: string;
  readonly status: 'met' | 'missed' | 'not judged' | 'reported';
  readonly detail: string;
}

const PGLOCK = 'pglock withLock (pg)';
const FLOOR = 'hand-written lock, work in an AsyncLocalStorage';
const x = (ratio: number | undefined) =>
  ratio === undefined || !Number.isFinite(ratio) ? 'n/a' : `${ratio.toFixed(2)}×`;
const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(3)} ms` : 'n/a');
const us = (value: number) => `${value.toFixed(2)} µs`;
const tps = (r: PgbenchResult | undefined) => (r === undefined || 'skipped' in r ? Number.NaN : r.tps);
/** Scenario 5's burst may take this much longer than the hand-written one and count as "no slower". */
export const BURST_TOLERANCE = 1.02;
/** The nesting targets: the ratio to hand-written on Node 24, to the hooks' floor on Node 20 and 22. */
export const NESTING_MIN = { current: 0.95, hooked: 0.97 } as const;
/** The first Node.js line whose AsyncLocalStorage needs no promise hooks (the reference line). */
export const HOOKLESS_MAJOR = 24;

/** The target names, in the report's order (the same on every Node line). */
export const TARGET_NAMES = {
  nesting: `Nesting by async context: \`withLock\` ≥ ${NESTING_MIN.current}× the hand-written lock on the same ORM (Node ${HOOKLESS_MAJOR}); ≥ ${NESTING_MIN.hooked}× the hooks' floor, the hand-written lock with its work in an AsyncLocalStorage (Node 20, 22); 1 and 4 loops`,
  micro: `pglock’s own JavaScript per \`withLock\` ≤ 3 µs on Node ${HOOKLESS_MAJOR} (micro-benchmark, no database, a name key included)`,
  timed: '`withLock` + `timeoutMs` ≥ 0.90× the untimed hand-written lock',
  setLocal: '`withLock` + `timeoutMs` ≥ 1.0× hand-written `SET LOCAL lock_timeout` + lock',
  roundTrips: '`withLock` adds exactly one round trip to a transaction, also with a timeout',
  batch:
    'Prisma `$transaction([$lock(…), …])` (no `timeoutMs`) ≥ 0.95× the same batch with a hand-written lock',
  boundedBatch:
    'Prisma `$lock(…, { timeoutMs })` batch: at its server-side floor (no target; beside pgbench’s bounded statement)',
  starvation:
    'Pool not starved: 100 `withLock` on one key (20 ms each), pool of 10: `SELECT 1` p99 ≤ 20 ms, burst no slower',
  hotKey:
    'Hot key: hand-off and throughput ≥ 0.9× hand-written (median of per-round ratios) at 2, 8, 32 workers; CPU per grant beside',
  fifo: 'Hot key FIFO as the server saw it (`pg_locks.waitstart`): no waiter granted after a later arrival',
  handOff: 'Hot-key hand-off p50 under 1 ms, at least 10× faster than any polling design',
} as const;

/**
 * Checks one Node.js line's figures against the targets. A target whose scenario ran while the
 * 1-minute load exceeded the machine's cores is "not judged", its figures still shown.
 *
 * @example
 * ```ts
 * for (const t of checkTargets(run, shared)) console.log(t.status, t.target, t.detail);
 * ```
 */
export function checkTargets(
  run: ScenarioResults,
  shared: Pick<SharedResults, 'timedForms'>,
): TargetResult[] {
  const { micro, overhead, hotKey, starvation, loads } = run;
  const major = Number(run.node.replace(/^v/, '').split('.')[0]);
  const hookless = major >= HOOKLESS_MAJOR;
  const rows = overhead.rows;
  const label = (r: OverheadRow) => `${r.adapter} ${r.loops}×`;
  // The CPU ratios beside a throughput ratio: what survives a busy machine.
  const cpu = (r: OverheadRow) => `CPU ${x(r.clientVsSameOrm)} client, ${x(r.serverVsSameOrm)} server`;
  const list = (picked: readonly OverheadRow[], ratio: (r: OverheadRow) => number | undefined) =>
    picked.map((r) => `${label(r)} ${x(ratio(r))} (${cpu(r)})`).join(', ');
  const judged = (
    name: string,
    picked: readonly OverheadRow[],
    ratio: (r: OverheadRow) => number | undefined,
    min: number,
  ): TargetResult => {
    const below = picked.filter((r) => !((ratio(r) ?? 0) >= min));
    return {
      target: name,
      status: picked.length > 0 && below.length === 0 ? 'met' : 'missed',
      detail:
        picked.length === 0
          ? 'no figures'
          : below.length === 0
            ? list(picked, ratio)
            : `below: ${list(below, ratio)} (at or above: ${
                list(
                  picked.filter((r) => !below.includes(r)),
                  ratio,
                ) || 'none'
              })`,
    };
  };
  const skipped = overhead.skipped.map((s) => `${s.name} skipped (${s.skipped})`).join('; ');
  const withSkips = (t: TargetResult): TargetResult =>
    skipped ? { ...t, status: 'missed', detail: `${t.detail}; ${skipped}` } : t;
  // Not judged on a machine busier than its cores: the figures stay, the verdict goes.
  const gate = (scenario: string, t: TargetResult): TargetResult => {
    const busy = overloaded(loads[scenario]);
    return busy === undefined || t.status === 'reported'
      ? t
      : { ...t, status: 'not judged', detail: `(${busy}): ${t.detail}` };
  };

  const locked = rows.filter((r) => r.kind === 'withLock' || r.kind === 'withLock + timeoutMs');
  const offRoundTrips = locked.filter((r) => r.loops === rows[0]?.loops && r.extraRoundTrips !== 1);
  const plain = rows.filter((r) => r.kind === 'withLock');
  const timed = rows.filter((r) => r.kind === 'withLock + timeoutMs');
  const batch = rows.filter((r) => r.kind === '$lock batch');
  const boundedBatch = rows.filter((r) => r.kind === '$lock batch + timeoutMs');
  const floorOf = (r: OverheadRow) =>
    rows.find((f) => f.adapter === r.adapter && f.loops === r.loops && f.kind === FLOOR);
  const ownUs = Math.max(micro.withLockNameUs, micro.withLockBigintUs) - micro.handWrittenUs;

  const comparisons = hotKey.comparisons.filter((c) => c.loops === 1);
  const slowHot = comparisons.filter((c) => !(c.handOff.median >= 0.9 && c.throughput.median >= 0.9));
  const pglockHot = hotKey.rows.filter((r) => r.design === PGLOCK && r.loops === 1);
  const unfair = pglockHot.filter(
    (r) => r.server === undefined || !(r.server.outOfOrderBeyondTolerance === 0),
  );
  const pglockStarve = starvation.find((s) => s.design.startsWith('pglock'));
  const handStarve = starvation.find((s) => !s.design.startsWith('pglock'));
  const burstRatio = pglockStarve && handStarve ? pglockStarve.burstMs / handStarve.burstMs : Number.NaN;
  const withLockRow = (adapter: string, loops: number) =>
    rows.find((r) => r.adapter === adapter && r.loops === loops && r.kind === 'withLock + timeoutMs');
  const form = (name: string) =>
    tps(shared.timedForms.find((f) => f.name === name && f.protocol === 'extended')?.result);
  const bare = form(shared.timedForms[0]?.name ?? '');
  const boundedStatement = form('pglock bounded statement (one SELECT)') / bare;

  const nesting = withSkips(
    hookless
      ? judged(TARGET_NAMES.nesting, plain, (r) => r.vsSameOrm, NESTING_MIN.current)
      : judged(TARGET_NAMES.nesting, plain, (r) => r.vsFloor, NESTING_MIN.hooked),
  );
  const beside = plain
    .map((r) =>
      hookless
        ? `${label(r)} ${x(r.vsFloor)} of the floor`
        : `${label(r)} ${x(r.vsSameOrm)} of hand-written (the floor itself ${x(floorOf(r)?.vsSameOrm)})`,
    )
    .join(', ');

  return [
    gate(SCENARIO.overhead, {
      ...nesting,
      detail: `${hookless ? 'vs hand-written' : 'vs the hooks’ floor'}: ${nesting.detail}. Beside it: ${beside}`,
    }),
    gate(
      SCENARIO.micro,
      hookless
        ? {
            target: TARGET_NAMES.micro,
            status: ownUs <= 3 ? 'met' : 'missed',
            detail: microDetail(micro),
          }
        : { target: TARGET_NAMES.micro, status: 'reported', detail: microDetail(micro) },
    ),
    gate(SCENARIO.overhead, withSkips(judged(TARGET_NAMES.timed, timed, (r) => r.vsSameOrm, 0.9))),
    gate(SCENARIO.overhead, withSkips(judged(TARGET_NAMES.setLocal, timed, (r) => r.vsSetLocal, 1))),
    // A count of statements: the machine's load does not change it.
    {
      target: TARGET_NAMES.roundTrips,
      status: locked.length > 0 && offRoundTrips.length === 0 ? 'met' : 'missed',
      detail:
        offRoundTrips.length === 0
          ? `counted: +1 statement on every adapter, with and without timeoutMs (${locked.filter((r) => r.loops === rows[0]?.loops).length} variants)`
          : offRoundTrips.map((r) => `${r.adapter} ${r.kind}: +${r.extraRoundTrips}`).join('; '),
    },
    gate(SCENARIO.overhead, {
      target: TARGET_NAMES.batch,
      status: batch.length > 0 && batch.every((r) => (r.vsSameOrm ?? 0) >= 0.95) ? 'met' : 'missed',
      detail:
        batch.length === 0
          ? `no figures${skipped ? `; ${skipped}` : ''}`
          : batch
              .map((r) => {
                const interactive = withLockRow(r.adapter, r.loops);
                return `${r.loops}×: ${x(r.vsSameOrm)} (${cpu(r)}); ${x(interactive ? r.opsPerSec / interactive.opsPerSec : undefined)} the ops/s of $withLock + timeoutMs`;
              })
              .join('; '),
    }),
    {
      target: TARGET_NAMES.boundedBatch,
      status: 'reported',
      detail:
        boundedBatch.length === 0
          ? 'no figures'
          : `${boundedBatch.map((r) => `${r.loops}×: ${x(r.vsSameOrm)} the hand-written batch (${cpu(r)})`).join('; ')}; pgbench (server alone, extended protocol): pglock's bounded statement ${x(boundedStatement)} the bare lock`,
    },
    gate(SCENARIO.starvation, {
      target: TARGET_NAMES.starvation,
      status:
        (pglockStarve?.probeP99Ms ?? Number.POSITIVE_INFINITY) <= 20 && burstRatio <= BURST_TOLERANCE
          ? 'met'
          : 'missed',
      detail: `SELECT 1 p99 ${ms(pglockStarve?.probeP99Ms ?? Number.NaN)} (every waiter on the server: ${ms(handStarve?.probeP99Ms ?? Number.NaN)}); burst ${x(burstRatio)} the hand-written burst (tolerance ${BURST_TOLERANCE}×)`,
    }),
    gate(SCENARIO.hotKey, {
      target: TARGET_NAMES.hotKey,
      status: comparisons.length > 0 && slowHot.length === 0 ? 'met' : 'missed',
      detail: comparisons
        .map(
          (c) =>
            `${c.workers} workers: throughput ${x(c.throughput.median)} (${x(c.throughput.min)}–${x(c.throughput.max)}), hand-off ${x(c.handOff.median)} (${x(c.handOff.min)}–${x(c.handOff.max)}), CPU per grant ${x(c.clientCpu)} client, ${x(c.serverCpu)} server`,
        )
        .join('; '),
    }),
    gate(SCENARIO.hotKey, {
      target: TARGET_NAMES.fifo,
      status: pglockHot.length > 0 && unfair.length === 0 ? 'met' : 'missed',
      detail: pglockHot
        .map((r) =>
          r.server === undefined
            ? `${r.workers} workers: not measured`
            : `${r.workers} workers: ${(r.server.outOfOrderBeyondTolerance * 100).toFixed(2)}% overtook a waiter whose waitstart was > ${ORDER_TOLERANCE_US / 1_000} ms earlier (${(r.server.outOfOrder * 100).toFixed(2)}% counting any earlier waitstart, largest ${r.server.largestInversionMs.toFixed(3)} ms; ${(r.server.seen * 100).toFixed(0)}% of waits seen)`,
        )
        .join('; '),
    }),
    gate(SCENARIO.hotKey, {
      target: TARGET_NAMES.handOff,
      status:
        pglockHot.length > 0 &&
        pglockHot.every((r) => r.handOffP50Ms < 1 && pollingRatio(hotKey.rows, r) >= 10)
          ? 'met'
          : 'missed',
      detail: pglockHot
        .map(
          (r) =>
            `${r.workers} workers ${ms(r.handOffP50Ms)} (fastest polling ÷ pglock ${x(pollingRatio(hotKey.rows, r))})`,
        )
        .join('; '),
    }),
  ];
}

function microDetail(micro: ScenarioResults['micro']): string {
  return `name key +${us(micro.withLockNameUs - micro.handWrittenUs)}, bigint key +${us(micro.withLockBigintUs - micro.handWrittenUs)} over the hand-written sequence (${us(micro.handWrittenUs)})`;
}

function pollingRatio(
  rows: ScenarioResults['hotKey']['rows'],
  pglock: ScenarioResults['hotKey']['rows'][number],
): number {
  const polling = rows.filter(
    (p) => p.polls && p.workers === pglock.workers && Number.isFinite(p.handOffP50Ms),
  );
  return Math.min(...polling.map((p) => p.handOffP50Ms)) / pglock.handOffP50Ms;
}
