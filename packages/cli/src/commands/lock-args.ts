import { parseArgs } from 'node:util';
import { InvalidLockKeyError, lockKey } from '@pglock/core';
import { parseDuration } from '../duration.ts';
import { CliError, ExitCode } from '../exit-codes.ts';

/** The options `wait` and `run` share. */
export interface LockArgs {
  readonly name: string;
  readonly namespace: string | undefined;
  readonly timeoutMs: number | undefined;
  readonly shared: boolean;
  readonly url: string | undefined;
}

/** Parses `<name> [--timeout d] [--namespace ns] [--shared] [--url url]`; checks the name. */
export function parseLockArgs(args: readonly string[], usage: string): LockArgs {
  const { values, positionals } = parseArgs({
    args: [...args],
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
      timeout: { type: 'string', short: 't' },
      shared: { type: 'boolean' },
    },
  });
  if (positionals.length !== 1) throw new CliError(`Usage: ${usage}`, ExitCode.usage);
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

/** "held by another session" or "still held after 30s", for the busy message. */
export function busyText(timeoutMs: number | undefined): string {
  return timeoutMs === 0 ? 'is held by another session' : `was not free within ${timeoutMs} ms`;
}
