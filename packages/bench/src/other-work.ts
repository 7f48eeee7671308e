import { readdirSync, readFileSync } from 'node:fs';

// Linux reports /proc/stat and /proc/<pid>/stat in USER_HZ, which is 100 on every architecture
// Node.js runs on (the kernel fixes it for user space whatever CONFIG_HZ is).
const TICKS_PER_SECOND = 100;

/**
 * The processes a scenario counts as its own besides its process tree: the servers it talks to.
 * Every PostgreSQL process (backends are children of the postmaster, which for a `DATABASE_URL`
 * server is not ours) and Redis (the redlock designs).
 */
const SERVER_NAMES = new Set(['postgres', 'postmaster', 'redis-server']);

interface ProcStat {
  readonly ppid: number;
  readonly name: string;
  /** utime + stime + cutime + cstime: its own CPU and that of the children it has waited for. */
  readonly ticks: number;
}

function readProc(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The name is in parentheses and may hold spaces or ")": the fields start after the last ")".
    const close = text.lastIndexOf(')');
    const name = text.slice(text.indexOf('(') + 1, close);
    const fields = text.slice(close + 2).split(' ');
    // fields[0] is field 3 (state): ppid is field 4, utime…cstime fields 14…17.
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    return { ppid: Number(fields[1]), name, ticks };
  } catch {
    return undefined; // gone between the listing and the read
  }
}

/** Every user-space process now: its CPU ticks, and whether it is the bench's (or a server's). */
function snapshot(roots: ReadonlySet<number>): Map<number, { ticks: number; other: boolean }> {
  const procs = new Map<number, ProcStat>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const stat = readProc(pid);
    if (stat !== undefined) procs.set(pid, stat);
  }
  const ours = (pid: number): boolean => {
    // Walks up to init; the tree is shallow (main → scenarios → workers, postmaster → backends).
    for (let at: number | undefined = pid; at !== undefined && at > 1; at = procs.get(at)?.ppid) {
      if (roots.has(at) || SERVER_NAMES.has(procs.get(at)?.name ?? '')) return true;
    }
    return false;
  };
  const result = new Map<number, { ticks: number; other: boolean }>();
  for (const [pid, stat] of procs) {
    // Kernel threads (kthreadd, pid 2, and its children) are left out: what they do here is the
    // bench's own disk and network I/O (WAL writes, loopback TCP), not other work.
    if (pid === 2 || stat.ppid === 2) continue;
    result.set(pid, { ticks: stat.ticks, other: !ours(pid) });
  }
  return result;
}

/**
 * Watches the CPU the rest of the machine uses while a scenario runs: every user-space process but
 * the bench's own (`roots` and their descendants) and the PostgreSQL and Redis servers'. Each counts
 * its own CPU and that of the children it reaped, so a short-lived process is counted in its parent's
 * (a process that ended within the window is counted there, whole: the figure errs high, never low).
 * The load average cannot tell this: 32 hot-key workers alone make it 13 on 2 cores, and it lags a
 * minute behind, so a heavy scenario would spoil the verdict on the next. `stop()` gives the other
 * work in cores (0.5: half a core, on average over the window), or undefined where /proc is missing
 * (not Linux).
 *
 * @example
 * ```ts
 * const watch = watchOtherWork([Number(process.env.PGLOCK_BENCH_ROOT ?? process.pid)]);
 * await scenario();
 * const cores = watch.stop(); // 0.02 on a quiet machine
 * ```
 */
export function watchOtherWork(roots: readonly number[]): { stop(): number | undefined } {
  const set = new Set([...roots, process.pid]);
  const read = () => {
    try {
      return snapshot(set);
    } catch {
      return undefined;
    }
  };
  const started = performance.now();
  const start = read();
  return {
    stop() {
      const end = read();
      const seconds = (performance.now() - started) / 1_000;
      if (start === undefined || end === undefined || seconds <= 0) return undefined;
      let ticks = 0;
      for (const [pid, now] of end) {
        if (now.other) ticks += Math.max(0, now.ticks - (start.get(pid)?.ticks ?? 0));
      }
      return ticks / TICKS_PER_SECOND / seconds;
    },
  };
}
