// The terminal view while the instances run: one row per instance, redrawn in place on a TTY, printed
// as plain snapshots every few seconds otherwise (CI logs). At most 80 columns.
import type { InstanceState } from './instances.ts';

const color = (code: number) => (text: string) => `\x1b[${code}m${text}\x1b[0m`;
const plain = (text: string) => text;

/** Renders instance rows; `log` prints a line above them without breaking the redraw. */
export class LiveView {
  readonly #out: NodeJS.WriteStream;
  readonly #tty: boolean;
  readonly #states: readonly InstanceState[];
  readonly #title: () => string;
  #drawn = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #paint: Record<'green' | 'yellow' | 'red' | 'dim' | 'bold', (text: string) => string>;

  constructor(out: NodeJS.WriteStream, states: readonly InstanceState[], title: () => string) {
    this.#out = out;
    this.#tty = out.isTTY === true;
    this.#states = states;
    this.#title = title;
    const colors = this.#tty && !process.env.NO_COLOR;
    this.#paint = {
      green: colors ? color(32) : plain,
      yellow: colors ? color(33) : plain,
      red: colors ? color(31) : plain,
      dim: colors ? color(2) : plain,
      bold: colors ? color(1) : plain,
    };
  }

  /** Starts redrawing: every 100 ms on a TTY, a snapshot every 3 s otherwise. */
  start(): void {
    if (this.#tty) {
      this.#draw();
      this.#timer = setInterval(() => this.#redraw(), 100);
    } else {
      this.#timer = setInterval(() => this.#print(this.#table()), 3_000);
    }
  }

  /** Stops redrawing and leaves the final table on screen. */
  stop(): void {
    clearInterval(this.#timer);
    if (this.#tty) this.#redraw();
    else this.#print(this.#table());
    this.#drawn = 0;
  }

  log(line: string): void {
    if (!this.#tty) {
      this.#print([line]);
      return;
    }
    this.#clear();
    this.#out.write(`${line}\n`);
    this.#draw();
  }

  #print(lines: readonly string[]): void {
    this.#out.write(`${lines.join('\n')}\n`);
  }

  #redraw(): void {
    this.#clear();
    this.#draw();
  }

  #clear(): void {
    if (this.#drawn > 0) this.#out.write(`\x1b[${this.#drawn}A\x1b[0J`);
    this.#drawn = 0;
  }

  #draw(): void {
    const lines = this.#table();
    this.#print(lines);
    this.#drawn = lines.length;
  }

  #table(): string[] {
    const { bold } = this.#paint;
    const head = `${'instance'.padEnd(12)}${'rebuild lock'.padEnd(15)}${'user lock'.padEnd(17)}${['rebuilt', 'skipped', 'updates', 'wait s'].map((h) => h.padStart(8)).join('')}`;
    return [bold(this.#title()), bold(head), ...this.#states.map((s) => this.#row(s))];
  }

  #row(s: InstanceState): string {
    const { green, yellow, red, dim } = this.#paint;
    const now = Date.now();
    const secs = (since: number) => `${((now - since) / 1000).toFixed(1)}s`;
    let rebuild: string;
    let user: string;
    if (s.status === 'killed') {
      rebuild = red('KILLED'.padEnd(15));
      user = red('(SIGKILL)'.padEnd(17));
    } else if (s.status !== 'running') {
      rebuild = dim(s.status.padEnd(15));
      user = ''.padEnd(17);
    } else {
      const r = s.rebuild;
      rebuild =
        r.state === 'holding'
          ? green(`holding ${secs(r.since)}`.padEnd(15))
          : r.state === 'skipped'
            ? yellow('skipped'.padEnd(15))
            : dim((r.state === 'rebuilt' ? 'rebuilt' : 'idle').padEnd(15));
      const u = s.user;
      user =
        u.state === 'holding'
          ? green(`holding ${u.name}`.padEnd(17))
          : u.state === 'waiting'
            ? yellow(`waiting ${u.name}`.padEnd(17))
            : dim('idle'.padEnd(17));
    }
    const counters = [s.rebuilds, s.skips, s.updates, (s.waitMs / 1000).toFixed(1)]
      .map((n) => String(n).padStart(8))
      .join('');
    // The leader (its onElected runs) is starred.
    const label = s.term !== undefined && s.status === 'running' ? `${s.label}*` : s.label;
    return `${label.padEnd(12)}${rebuild}${user}${counters}`;
  }
}
