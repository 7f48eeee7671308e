import { InvalidLockKeyError, lockKey } from '@pglock/core';
import { parseDuration } from '../duration.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { CommandArgs } from '../parse-command.ts';

/** The options `wait` and `run` share. */
export const lockOptions = {
  timeout: {
    type: 'string',
    short: 't',
    value: '30s',
    description: 'give up after this long (500ms, 30s, 2m; 0 tries once)',
  },
  namespace: { type: 'string', short: 'n', value: 'ns', description: 'the namespace the name is in' },
  shared: { type: 'boolean', description: 'take it shared (shared holders do not exclude others)' },
  url: { type: 'string', value: 'url', description: 'PostgreSQL URL (default: DATABASE_URL)' },
} as const;

/** What `wait` and `run` were asked to lock. */
export interface LockArgs {
  readonly name: string;
  readonly namespace: string | undefined;
  readonly timeoutMs: number | undefined;
  readonly shared: boolean;
  readonly url: string | undefined;
}

/** Reads the parsed `<name> [--timeout d] [--namespace ns] [--shared] [--url url]`; checks the name. */
export function lockArgs({ values, positionals }: CommandArgs<typeof lockOptions>): LockArgs {
  const name = positionals[0] as string;
  try {
    lockKey(name, { namespace: values.namespace });
  } catch (error) {
    if (InvalidLockKeyError.is(error)) throw new CliError(error.message, ExitCode.usage);
    throw error;
  }
  return {
    name,
    namespace: values.namespace,
    timeoutMs: values.timeout === undefined ? undefined : parseDuration(values.timeout),
    shared: values.shared ?? false,
    url: values.url,
  };
}

/** `"name"` or `"name" [ns]`, for messages. */
export function lockLabel(args: Pick<LockArgs, 'name' | 'namespace'>): string {
  return args.namespace === undefined
    ? JSON.stringify(args.name)
    : `${JSON.stringify(args.name)} [${args.namespace}]`;
}

/**
 * Why the lock was not taken, for the busy message. Without `--timeout` pglock waits without limit,
 * so only the server's own `lock_timeout` (set for the role or database) can have ended the wait.
 */
export function busyText(timeoutMs: number | undefined): string {
  if (timeoutMs === 0) return 'is held by another session';
  if (timeoutMs === undefined) {
    return "was not free before the server's lock_timeout ended the wait (set for this role or database; SHOW lock_timeout)";
  }
  return `was not free within ${timeoutMs} ms`;
}
