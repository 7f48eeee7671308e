import { parseArgs } from 'node:util';

/** The four adapters, in the order instances are assigned (instance 5 is pg again, and so on). */
export const ADAPTERS = ['pg', 'prisma', 'drizzle', 'kysely'] as const;
export type AdapterName = (typeof ADAPTERS)[number];

/** What one run does; every field has a flag. */
export interface DemoOptions {
  readonly instances: number;
  readonly seconds: number;
  readonly adapters: readonly AdapterName[];
  readonly users: number;
  /** SIGKILL the leader halfway, while it holds the rebuild lock. */
  readonly kill: boolean;
  /** Debug: make every lock name unique per call, so the locks exclude nothing (the checks must fail). */
  readonly lock: boolean;
  readonly out: string;
  readonly report: string | undefined;
}

export const HELP = `pnpm demo [-- options]

Starts API instances as separate Node processes (one per adapter: pg, Prisma,
Drizzle, Kysely) on one shared schema. Each rebuilds a leaderboard with
tryWithLock (skipping while another instance rebuilds), applies per-user score
updates with withLock, fires a digest job with runOnce (cron '* * * * * *': once
per second across the fleet) and campaigns with leader for the scheduler. Halfway the
leader is killed with SIGKILL while it holds the rebuild lock. The database is
then checked: no overlapping rebuilds, no lost updates, one digest per period,
one leader at a time with rising terms, a failover under 1 s, no lock left
held. Exit code 1 when a check fails.

Uses DATABASE_URL when set, else an embedded PostgreSQL removed afterwards.

Options:
  --instances <n>    API instances, cycling through the adapters (default 4)
  --seconds <s>      how long the instances work (default 15)
  --adapters <list>  comma-separated subset of pg,prisma,drizzle,kysely
  --users <n>        users whose scores are updated (default 6)
  --no-kill          do not kill the leader
  --no-lock          debug: lock names unique per call, so nothing is excluded;
                     the verification must then report failures
  --out <file>       timeline page (default examples/demo/out/timeline.html)
  --report <file>    also write the verification as JSON
  -h, --help         show this help
`;

/** Thrown for a bad flag; main prints the message and the help. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Parses the demo's flags. A bare `--` anywhere is dropped: `pnpm demo -- --seconds 5` may hand the
 * script a literal `--` depending on how the root script forwards arguments.
 *
 * @example
 * ```ts
 * const options = parseOptions(['--instances', '8', '--adapters', 'prisma,drizzle'], 'out/timeline.html');
 * ```
 */
export function parseOptions(argv: readonly string[], defaultOut: string): DemoOptions | 'help' {
  const { values } = parseArgs({
    args: argv.filter((arg) => arg !== '--'),
    options: {
      instances: { type: 'string', default: '4' },
      seconds: { type: 'string', default: '15' },
      adapters: { type: 'string', default: ADAPTERS.join(',') },
      users: { type: 'string', default: '6' },
      'no-kill': { type: 'boolean', default: false },
      'no-lock': { type: 'boolean', default: false },
      out: { type: 'string', default: defaultOut },
      report: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return 'help';
  const adapters = values.adapters.split(',').map((name) => name.trim().toLowerCase());
  const unknown = adapters.filter((name) => !(ADAPTERS as readonly string[]).includes(name));
  if (unknown.length > 0 || adapters.length === 0) {
    throw new UsageError(
      `--adapters: unknown ${unknown.join(', ') || '(empty)'}; use ${ADAPTERS.join(',')}.`,
    );
  }
  const kill = !values['no-kill'];
  return {
    instances: integer('--instances', values.instances, kill ? 2 : 1, 32),
    seconds: integer('--seconds', values.seconds, 2, 600),
    adapters: [...new Set(adapters)] as AdapterName[],
    users: integer('--users', values.users, 1, 1000),
    kill,
    lock: !values['no-lock'],
    out: values.out,
    report: values.report,
  };
}

function integer(flag: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`${flag} must be an integer from ${min} to ${max} (got ${text}).`);
  }
  return value;
}
