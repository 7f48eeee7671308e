import type { AdvisoryLockInfo } from '@pglock/core';
import type { NameIndex, NameSource } from './names.ts';

/** One session holding or waiting for a key, as `pglock locks --json` prints it. */
export interface LockSession {
  readonly pid: number | null;
  readonly mode: 'exclusive' | 'shared';
  readonly applicationName: string | null;
  readonly clientAddress: string | null;
  readonly state: string | null;
  /** Holders: ms since the holder's transaction began or it went idle (the server keeps no grant time). */
  readonly heldMs?: number | null;
  /** Waiters: ms since the wait began (`pg_locks.waitstart`). */
  readonly waitedMs?: number | null;
}

/** One advisory key with its holders and waiters (waiters in arrival order). */
export interface LockEntry {
  /** A bigint key as decimal text (JSON has no int64), or a pair. */
  readonly key:
    | { readonly form: 'bigint'; readonly value: string }
    | { readonly form: 'pair'; readonly pair: readonly [number, number] };
  /** The halves `pg_locks` shows (`classid`, `objid`, unsigned). */
  readonly classid: number;
  readonly objid: number;
  readonly name: string | null;
  readonly namespace: string | null;
  readonly nameSource: NameSource | null;
  readonly holders: readonly LockSession[];
  readonly waiters: readonly LockSession[];
}

/** What `pglock locks --json` prints. */
export interface LockReport {
  readonly takenAt: string;
  readonly locks: readonly LockEntry[];
  readonly warnings: readonly string[];
}

/**
 * Groups `inspectLocks` rows by key, attaches known names, and sorts contention to the top: most
 * waiters first, then the longest wait, then the longest hold.
 *
 * @example
 * ```ts
 * import { inspectLocks } from '@pglock/pg';
 * import { buildLockReport } from '@pglock/cli';
 *
 * const report = buildLockReport(await inspectLocks(pool), new Map());
 * ```
 */
export function buildLockReport(
  rows: readonly AdvisoryLockInfo[],
  names: NameIndex,
  warnings: readonly string[] = [],
  takenAt = new Date(),
): LockReport {
  const groups = new Map<string, { rows: AdvisoryLockInfo[] }>();
  for (const row of rows) {
    if (row.ownSession) continue;
    const id = groupId(row);
    const group = groups.get(id) ?? { rows: [] };
    group.rows.push(row);
    groups.set(id, group);
  }
  const locks = [...groups.values()].map(({ rows: members }) => entry(members, names));
  locks.sort(
    (a, b) =>
      b.waiters.length - a.waiters.length ||
      longest(b.waiters, 'waitedMs') - longest(a.waiters, 'waitedMs') ||
      longest(b.holders, 'heldMs') - longest(a.holders, 'heldMs') ||
      a.classid - b.classid ||
      a.objid - b.objid,
  );
  return { takenAt: takenAt.toISOString(), locks, warnings };
}

/** Decimal texts of the bigint keys in `rows`, for looking names up. */
export function bigintKeys(rows: readonly AdvisoryLockInfo[]): string[] {
  return [...new Set(rows.flatMap((row) => (row.key.form === 'bigint' ? [String(row.key.value)] : [])))];
}

function groupId(row: AdvisoryLockInfo): string {
  return `${row.key.form}:${row.classid}:${row.objid}`;
}

function entry(rows: readonly AdvisoryLockInfo[], names: NameIndex): LockEntry {
  const first = rows[0] as AdvisoryLockInfo;
  const key =
    first.key.form === 'bigint'
      ? ({ form: 'bigint', value: String(first.key.value) } as const)
      : ({ form: 'pair', pair: first.key.pair } as const);
  const known = key.form === 'bigint' ? names.get(key.value) : undefined;
  const session = (row: AdvisoryLockInfo) => ({
    pid: row.pid,
    mode: row.mode,
    applicationName: row.applicationName,
    clientAddress: row.clientAddress,
    state: row.state,
  });
  return {
    key,
    classid: first.classid,
    objid: first.objid,
    name: known?.name ?? null,
    namespace: known?.namespace ?? null,
    nameSource: known?.source ?? null,
    holders: rows.filter((r) => r.granted).map((r) => ({ ...session(r), heldMs: r.heldMs })),
    waiters: rows.filter((r) => !r.granted).map((r) => ({ ...session(r), waitedMs: r.waitedMs })),
  };
}

function longest(sessions: readonly LockSession[], field: 'heldMs' | 'waitedMs'): number {
  return sessions.reduce((max, s) => Math.max(max, s[field] ?? 0), 0);
}
