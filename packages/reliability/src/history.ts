/**
 * One committed critical section on one key, as a chaos worker recorded it: `entered` after the lock
 * was granted, `exited` as the last statement before COMMIT, both PostgreSQL's `clock_timestamp()`
 * (one clock for every process). A transaction-scoped section writes inside the lock's own
 * transaction, so its write commits before its lock is released. A session-lock section writes
 * nothing but its row: its write could not be fenced by a lock held on another connection (a holder
 * terminated just after a check may still commit). Its `exited` is the moment a check found the
 * holder's backend still holding the lock in `pg_locks`, so it held the lock from `entered` to
 * `exited`. A section whose process or backend died, or whose session lock was lost, leaves no row.
 */
export interface SectionRow {
  readonly id: number;
  readonly worker: string;
  readonly key: string;
  readonly mode: 'exclusive' | 'shared';
  /** Which lock guarded it: a transaction-scoped one or a session lock (the two conflict on a key). */
  readonly scope?: 'transaction' | 'session' | undefined;
  /** Microseconds since the epoch (`clock_timestamp()`), so that ordering is exact. */
  readonly entered: bigint;
  readonly exited: bigint;
  /** The key's counter as the section read it; an exclusive transaction-scoped section wrote `seen + 1`. */
  readonly seen: number;
}

/** A key's counter at the end of the run. */
export interface CounterRow {
  readonly key: string;
  readonly value: number;
}

/** A broken guarantee, with the rows that show it. */
export interface Violation {
  readonly kind:
    | 'exclusive-overlap'
    | 'shared-overlap'
    | 'lost-increment'
    | 'lock-left-held'
    | 'session-lock-through-pooler'
    | 'lock-leaked-through-pooler'
    // runOnce and leader (schedule-history.ts)
    | 'period-run-twice'
    | 'run-outside-period'
    | 'thrown-run-committed'
    | 'election-without-lock'
    | 'terms-not-increasing'
    | 'leader-overlap'
    | 'tick-without-election'
    | 'fenced-term-regressed'
    | 'term-shared';
  readonly key: string;
  readonly detail: string;
}

/** What the checker was given and what it found. */
export interface HistoryReport {
  readonly sections: number;
  readonly exclusive: number;
  readonly shared: number;
  /** Sections guarded by a session lock (leaders and standbys). */
  readonly session: number;
  readonly violations: readonly Violation[];
}

/**
 * Checks a chaos history: no two exclusive sections on a key overlapped, no exclusive section
 * overlapped a shared one, every committed increment is in the final counter (and each exclusive
 * section saw the value the one before it wrote, a session-lock section the value of every writer
 * before it), no advisory lock is left held, no session lock was
 * granted through a transaction-mode pooler, and no refused one stayed behind on a pooler's backend.
 *
 * @example
 * ```ts
 * const report = checkHistory({ sections, counters, heldLocks: 0 });
 * if (report.violations.length > 0) console.error(report.violations);
 * ```
 */
export function checkHistory(history: {
  readonly sections: readonly SectionRow[];
  readonly counters: readonly CounterRow[];
  /** Advisory locks still in `pg_locks` for the run's database once every process is gone. */
  readonly heldLocks: number;
  /** Session locks a worker was handed through a transaction-mode pooler (each is a possible second holder). */
  readonly poolerSessionLocks?: number | undefined;
  /**
   * Advisory locks seen held by an idle (not in a transaction) server connection of the pooler: a
   * session lock left behind there, which every later transaction on that backend would share.
   */
  readonly poolerLeaks?: readonly string[] | undefined;
}): HistoryReport {
  const violations: Violation[] = [];
  // Map.groupBy is Node 21+; the repo supports Node 20.
  const byKey = new Map<string, SectionRow[]>();
  for (const row of history.sections) byKey.set(row.key, [...(byKey.get(row.key) ?? []), row]);
  const counters = new Map(history.counters.map((row) => [row.key, row.value]));
  for (const [key, rows] of byKey) {
    violations.push(...overlaps(key, rows));
    violations.push(...lostIncrements(key, rows, counters.get(key) ?? 0));
  }
  for (const [key, value] of counters) {
    if (!byKey.has(key) && value !== 0) {
      violations.push({
        kind: 'lost-increment',
        key,
        detail: `counter is ${value} but no committed section wrote it`,
      });
    }
  }
  if (history.heldLocks > 0) {
    violations.push({
      kind: 'lock-left-held',
      key: '*',
      detail: `${history.heldLocks} advisory lock(s) still held after every process ended`,
    });
  }
  if ((history.poolerSessionLocks ?? 0) > 0) {
    violations.push({
      kind: 'session-lock-through-pooler',
      key: '*',
      detail: `${history.poolerSessionLocks} session lock(s) granted through a transaction-mode pooler instead of refused`,
    });
  }
  for (const leak of history.poolerLeaks ?? []) {
    violations.push({ kind: 'lock-leaked-through-pooler', key: '*', detail: leak });
  }
  const exclusive = history.sections.filter((row) => row.mode === 'exclusive').length;
  return {
    sections: history.sections.length,
    exclusive,
    shared: history.sections.length - exclusive,
    session: history.sections.filter((row) => row.scope === 'session').length,
    violations,
  };
}

// A sweep over the sections sorted by entry: each one is compared with every earlier section that
// has not exited yet. Touching endpoints do not overlap (one exits before COMMIT, the next enters after).
function overlaps(key: string, rows: readonly SectionRow[]): Violation[] {
  const sorted = [...rows].sort((a, b) => compare(a.entered, b.entered) || a.id - b.id);
  const open: SectionRow[] = [];
  const found: Violation[] = [];
  for (const row of sorted) {
    for (let i = open.length - 1; i >= 0; i--) {
      if ((open[i] as SectionRow).exited <= row.entered) open.splice(i, 1);
    }
    for (const other of open) {
      if (other.mode === 'shared' && row.mode === 'shared') continue;
      const kind =
        other.mode === 'exclusive' && row.mode === 'exclusive' ? 'exclusive-overlap' : 'shared-overlap';
      found.push({ kind, key, detail: `${describe(other)} overlaps ${describe(row)}` });
    }
    open.push(row);
  }
  return found;
}

function lostIncrements(key: string, rows: readonly SectionRow[], counter: number): Violation[] {
  const byEntry = (a: SectionRow, b: SectionRow) => compare(a.entered, b.entered) || a.id - b.id;
  const writers = rows.filter((row) => row.mode === 'exclusive' && row.scope !== 'session').sort(byEntry);
  const found: Violation[] = [];
  writers.forEach((row, index) => {
    if (row.seen !== index) {
      found.push({
        kind: 'lost-increment',
        key,
        detail: `${describe(row)} read ${row.seen}, but ${index} exclusive section(s) committed before it`,
      });
    }
  });
  // A session-lock section reads the counter and writes nothing: it must see every writer that
  // entered before it (each committed before releasing its lock), and none after.
  for (const row of rows.filter((r) => r.scope === 'session')) {
    const before = writers.filter((writer) => byEntry(writer, row) < 0).length;
    if (row.seen !== before) {
      found.push({
        kind: 'lost-increment',
        key,
        detail: `${describe(row)} read ${row.seen}, but ${before} exclusive section(s) committed before it`,
      });
    }
  }
  if (counter !== writers.length) {
    found.push({
      kind: 'lost-increment',
      key,
      detail: `counter is ${counter} after ${writers.length} committed exclusive section(s)`,
    });
  }
  return found;
}

function compare(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function describe(row: SectionRow): string {
  return `#${row.id} (${row.mode}${row.scope === 'session' ? ' session' : ''}, ${row.worker}, ${row.entered}..${row.exited})`;
}
