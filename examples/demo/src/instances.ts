// The controller's side of the instance processes: spawning, their state for the live view, the lock
// holds for the timeline, leadership, and the SIGKILL halfway.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AdapterName } from './options.ts';
import {
  type ControllerMessage,
  type InstanceConfig,
  type InstanceMessage,
  REBUILD_LOCK,
} from './protocol.ts';

const instancePath = fileURLToPath(new URL('./instance.ts', import.meta.url));

export type InstanceStatus = 'starting' | 'running' | 'killed' | 'done' | 'failed';

/** What the live view shows of one instance. */
export interface InstanceState {
  readonly index: number;
  readonly label: string;
  readonly adapter: AdapterName;
  status: InstanceStatus;
  rebuild: { state: 'idle' | 'holding' | 'rebuilt' | 'skipped'; since: number };
  user: { state: 'idle' | 'waiting' | 'holding'; name: string; since: number };
  rebuilds: number;
  skips: number;
  updates: number;
  /** Time spent waiting for per-user locks, ms. */
  waitMs: number;
  /** Calls of the digest job (runOnce) by outcome. */
  digests: { ran: number; done: number; busy: number };
  /** The term this instance leads, while it does. */
  term: number | undefined;
  /** What the leader campaign reported to onError. */
  leaderErrors: string[];
  exitCode: number | null;
  /** The last lines of the process's output, shown when it fails. */
  output: string;
}

/** One lock held by one instance, wall-clock ms; `cut` when the holder was killed. */
export interface Hold {
  readonly instance: number;
  readonly kind: 'rebuild' | 'user';
  readonly name: string;
  readonly from: number;
  readonly to: number;
  readonly cut: boolean;
}

/** One term this instance led, wall-clock ms (`to` is when its term ended, or when it was killed). */
export interface Term {
  readonly instance: number;
  readonly term: number;
  readonly identity: string;
  readonly from: number;
  to: number | undefined;
}

/** One digest job run (runOnce answered `ran`), wall-clock ms of its commit. */
export interface JobRun {
  readonly instance: number;
  readonly at: number;
}

/** One instance process and the bookkeeping of its messages. */
export class Instance {
  readonly state: InstanceState;
  readonly holds: Hold[] = [];
  readonly terms: Term[] = [];
  readonly runs: JobRun[] = [];
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  /** Called with the rebuild id when the instance reports it holds the rebuild lock. */
  onRebuildHeld: (rebuildId: number, at: number) => void = () => {};
  /** Called when the instance's onElected runs, and when that term ended. */
  onLeadership: (term: number, at: number, elected: boolean) => void = () => {};
  readonly #child: ChildProcess;
  readonly #open = new Map<number, { name: string; from: number }>();

  constructor(config: InstanceConfig) {
    this.state = {
      index: config.index,
      label: config.label,
      adapter: config.adapter,
      status: 'starting',
      rebuild: { state: 'idle', since: Date.now() },
      user: { state: 'idle', name: '', since: Date.now() },
      rebuilds: 0,
      skips: 0,
      updates: 0,
      waitMs: 0,
      digests: { ran: 0, done: 0, busy: 0 },
      term: undefined,
      leaderErrors: [],
      exitCode: null,
      output: '',
    };
    this.#child = spawn(process.execPath, ['--import', 'tsx', instancePath], {
      env: { ...process.env, PGLOCK_DEMO_INSTANCE: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const keep = (chunk: Buffer) => {
      this.state.output = (this.state.output + String(chunk)).slice(-4_000);
    };
    this.#child.stdout?.on('data', keep);
    this.#child.stderr?.on('data', keep);
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code) => {
        this.state.exitCode = code;
        if (this.state.status !== 'killed') this.state.status = code === 0 ? 'done' : 'failed';
        resolve(code);
      });
    });
    this.ready = new Promise((resolve, reject) => {
      this.#child.on('message', (message: InstanceMessage) => {
        if (message.type === 'ready') resolve();
        this.#handle(message);
      });
      this.exited.then((code) =>
        reject(new Error(`${config.label} exited with ${code} before it was ready:\n${this.state.output}`)),
      );
    });
    this.ready.catch(() => {});
  }

  start(endAt: number): void {
    this.state.status = 'running';
    this.send({ type: 'start', endAt });
  }

  send(message: ControllerMessage): void {
    if (this.#child.connected) this.#child.send(message);
  }

  /** SIGKILL: no cleanup runs in the process; PostgreSQL ends its sessions and their locks. */
  kill(at: number): void {
    this.state.status = 'killed';
    this.state.term = undefined;
    this.#endTerms(at);
    this.#child.kill('SIGKILL');
    for (const [id, open] of this.#open) this.#close(id, open, at, true);
  }

  /** Ends a process that outlived its time (or on Ctrl+C). */
  abort(): void {
    if (this.state.exitCode === null && this.state.status !== 'killed') this.#child.kill('SIGKILL');
  }

  #handle(message: InstanceMessage): void {
    if (this.state.status === 'killed') return; // messages already in flight when it died
    const s = this.state;
    switch (message.type) {
      case 'rebuilt':
        s.rebuilds++;
        return;
      case 'skipped':
        s.skips++;
        return;
      case 'updated':
        s.updates++;
        return;
      case 'rebuild-held':
        this.onRebuildHeld(message.rebuildId, message.at);
        return;
      case 'digest':
        s.digests[message.outcome]++;
        if (message.outcome === 'ran') this.runs.push({ instance: s.index, at: message.at });
        return;
      case 'elected':
        s.term = message.term;
        this.terms.push({
          instance: s.index,
          term: message.term,
          identity: s.label,
          from: message.at,
          to: undefined,
        });
        this.onLeadership(message.term, message.at, true);
        return;
      case 'term-ended':
        if (s.term === message.term) s.term = undefined;
        this.#endTerms(message.at, message.term);
        this.onLeadership(message.term, message.at, false);
        return;
      case 'leader-error':
        s.leaderErrors.push(message.message);
        return;
      case 'lock':
        break;
      default:
        return;
    }
    const rebuild = message.name.startsWith(REBUILD_LOCK);
    const name = message.name.replace(/\/unlocked-.*$/, '');
    switch (message.event) {
      case 'requested':
        if (!rebuild) s.user = { state: 'waiting', name, since: message.at };
        break;
      case 'acquired':
        this.#open.set(message.id, { name, from: message.at });
        if (rebuild) s.rebuild = { state: 'holding', since: message.at };
        else {
          s.user = { state: 'holding', name, since: message.at };
          s.waitMs += message.waitMs ?? 0;
        }
        break;
      case 'not-acquired':
        if (rebuild) s.rebuild = { state: 'skipped', since: message.at };
        else s.user = { state: 'idle', name: '', since: message.at };
        break;
      case 'released': {
        const open = this.#open.get(message.id);
        if (open) this.#close(message.id, open, message.at, false);
        if (rebuild) s.rebuild = { state: 'rebuilt', since: message.at };
        else s.user = { state: 'idle', name: '', since: message.at };
        break;
      }
    }
  }

  /** Ends the open term `term` (or every open one: the instance was killed) at `at`. */
  #endTerms(at: number, term?: number): void {
    for (const open of this.terms) {
      if (open.to === undefined && (term === undefined || open.term === term)) open.to = at;
    }
  }

  #close(id: number, open: { name: string; from: number }, to: number, cut: boolean): void {
    this.#open.delete(id);
    const kind = open.name.startsWith(REBUILD_LOCK) ? 'rebuild' : 'user';
    this.holds.push({ instance: this.state.index, kind, name: open.name, from: open.from, to, cut });
  }
}
