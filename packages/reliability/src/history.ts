/**
 * One committed critical section on one key, as a chaos worker recorded it inside the lock's own
 * transaction: `entered` after the lock was granted, `exited` as the last statement before COMMIT,
 * both PostgreSQL's `clock_timestamp()` (one clock for every process). A section whose process or
 * backend died never commits, so it leaves no row, and neither does its increment.
 */
export interface SectionRow {
  readonly id: number;
  readonly worker: string;
  readonly key: string;
  readonly mode: 'exclusive' | 'shared';
  /** Microseconds since the epoch (`clock_timestamp()`), so that ordering is exact. */
  readonly entered: bigint;
  readonly exited: bigint;
  /** The key's counter as the section read it; an exclusive section wrote `seen + 1`. */
  readonly seen: number;
}

/** A key's counter at the end of the run. */
export interface CounterRow {
  readonly key: string;
  readonly value: number;
}

/** A broken guarantee, with the rows that show it. */
export interface Violation {
  readonly kind: 'exclusive-overlap' | 'shared-overlap' | 'lost-increment' | 'lock-left-held';
  readonly key: string;
  readonly detail: string;
}

/** What the checker was given and what it found. */
export interface HistoryReport {
  readonly sections: number;
  readonly exclusive: number;
  readonly shared: number;
  readonly violations: readonly Violation[];
}

/**
 * Checks a chaos history: no two exclusive sections on a key overlapped, no exclusive section
 * overlapped a shared one, every committed increment is in the final counter (and each exclusive
 * section saw the value the one before it wrote), and no advisory lock is left held.
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
  const exclusive = history.sections.filter((row) => row.mode === 'exclusive').length;
  return {
    sections: history.sections.length,
    exclusive,
    shared: history.sections.length - exclusive,
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
  const writers = rows
    .filter((row) => row.mode === 'exclusive')
    .sort((a, b) => compare(a.entered, b.entered) || a.id - b.id);
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
  return `#${row.id} (${row.mode}, ${row.worker}, ${row.entered}..${row.exited})`;
}
