import { InvalidLockOptionsError } from './errors.ts';

/** The options of every lock call (`LockOptions`). */
export const LOCK_OPTION_KEYS = ['timeoutMs', 'shared', 'signal', 'namespace', 'maxKeys'] as const;
/** `withLock` / `tryWithLock`: a lock call's, plus the settings of the transaction it opens. */
export const WITH_LOCK_OPTION_KEYS = [...LOCK_OPTION_KEYS, 'transaction'] as const;
/** The session verbs: a lock call's, plus the liveness check of the pinned connection. */
export const SESSION_LOCK_OPTION_KEYS = [...LOCK_OPTION_KEYS, 'heartbeatMs', 'connection'] as const;
/** `isLocked`: a snapshot of one key, whichever mode holds it. */
export const IS_LOCKED_OPTION_KEYS = ['namespace'] as const;
/** `runOnce`. */
export const RUN_ONCE_OPTION_KEYS = [
  'per',
  'cron',
  'timeZone',
  'timeoutMs',
  'signal',
  'namespace',
  'transaction',
  'minIntervalMs',
  'catchUp',
  'maxRunMs',
  'retry',
] as const;
/** `leader`. */
export const LEADER_OPTION_KEYS = [
  'onElected',
  'onError',
  'leaseMs',
  'heartbeatMs',
  'namespace',
  'retryMs',
  'identity',
] as const;
/** `currentLeader`. */
export const CURRENT_LEADER_OPTION_KEYS = ['namespace'] as const;
/** `observeLeader`. */
export const OBSERVE_LEADER_OPTION_KEYS = ['onChange', 'onError', 'pollMs', 'namespace', 'signal'] as const;
/** The defaults of `advisoryLocks(db, defaults)` core reads (an adapter may add its own). */
export const ADVISORY_LOCKS_OPTION_KEYS = [
  ...LOCK_OPTION_KEYS,
  'transaction',
  'heartbeatMs',
  'connection',
] as const;
/** The settings of `transaction: { … }`. */
export const TRANSACTION_SETTING_KEYS = [
  'isolationLevel',
  'accessMode',
  'deferrable',
  'timeout',
  'maxWait',
] as const;

// Names other lock libraries (and PostgreSQL itself) use for an option pglock calls otherwise.
const ALIASES: Readonly<Record<string, string>> = {
  locktimeout: 'timeoutMs',
  wait: 'timeoutMs',
  waitms: 'timeoutMs',
  waittimeout: 'timeoutMs',
  acquiretimeout: 'timeoutMs',
  timeoutmillis: 'timeoutMs',
  abortsignal: 'signal',
  exclusive: 'shared',
  mode: 'shared',
  isolation: 'transaction.isolationLevel',
  readonly: 'transaction.accessMode',
  heartbeat: 'heartbeatMs',
  heartbeatinterval: 'heartbeatMs',
  // client-go's LeaseDuration, etcd's lease TTL.
  lease: 'leaseMs',
  leaseduration: 'leaseMs',
  ttl: 'leaseMs',
  period: 'per',
  interval: 'per',
  every: 'per',
  schedule: 'cron',
  tz: 'timeZone',
  lockatleastfor: 'minIntervalMs',
  mininterval: 'minIntervalMs',
  catchup: 'catchUp',
  fill: 'catchUp',
  lockatmostfor: 'maxRunMs',
  maxrun: 'maxRunMs',
  maxduration: 'maxRunMs',
  runtimeout: 'maxRunMs',
  retries: 'retry',
  retrylimit: 'retry',
  maxattempts: 'retry',
};

/** Where a checked object sits, and what its message offers. */
export interface OptionKeysContext {
  /** The path of a nested object, with its dot (`'transaction.'`); `''` at the top. */
  readonly prefix?: string | undefined;
  /** Known paths elsewhere (one level in or out), offered when the key belongs there. */
  readonly elsewhere?: readonly string[] | undefined;
  /** The keys the message lists (default `known`): an adapter's supported settings, say. */
  readonly listed?: readonly string[] | undefined;
}

/**
 * Refuses, with `InvalidLockOptionsError`, an own key of `options` that is not one of `known`: a
 * misspelt or misplaced option (`{ isolationLevel }` instead of `{ transaction: { isolationLevel } }`)
 * would otherwise be ignored, and the call run with the defaults. The message names the key, the
 * nearest known one ("did you mean `transaction.isolationLevel`?") and every key the verb takes.
 *
 * @example
 * ```ts
 * import { checkOptionKeys } from '@pglock/core/internal';
 * import { WITH_LOCK_OPTION_KEYS } from './option-keys.ts';
 *
 * checkOptionKeys({ timeoutMs: 500 }, WITH_LOCK_OPTION_KEYS, 'withLock'); // passes
 * checkOptionKeys({ isolationLevel: 'serializable' }, WITH_LOCK_OPTION_KEYS, 'withLock');
 * // InvalidLockOptionsError: withLock: unknown option `isolationLevel` (did you mean `transaction.isolationLevel`?) …
 * ```
 */
export function checkOptionKeys(
  options: object,
  known: readonly string[],
  verb: string,
  context: OptionKeysContext = {},
): void {
  // A loop over the own keys, with no array built: this runs on every call given options.
  for (const key in options) {
    if (!Object.hasOwn(options, key) || known.includes(key)) continue;
    throw unknownKey(key, known, verb, context);
  }
}

function unknownKey(
  key: string,
  known: readonly string[],
  verb: string,
  { prefix = '', elsewhere, listed = known }: OptionKeysContext,
): InvalidLockOptionsError {
  const around =
    elsewhere ??
    (known.includes('transaction') ? TRANSACTION_SETTING_KEYS.map((k) => `transaction.${k}`) : []);
  const guess = nearest(key, [...known.map((k) => prefix + k), ...around], prefix);
  const what = prefix === '' ? 'option' : 'setting';
  const of =
    prefix === ''
      ? `the options of ${verb} are`
      : `the ${prefix.slice(0, -1)} settings ${verb} takes here are`;
  return new InvalidLockOptionsError(
    `${verb}: unknown ${what} \`${prefix}${key}\`${guess === undefined ? '' : ` (did you mean ${guess}?)`}; ` +
      `${of} ${listed.join(', ') || 'none'}. Pass only those: an unknown key would be ignored, and the call would run without it.`,
  );
}

/** "`a`", or "`a` or `b`": the known paths whose last name is closest to `typed`. */
function nearest(typed: string, paths: readonly string[], prefix: string): string | undefined {
  const norm = normalize(typed);
  const leaf = (path: string) => path.slice(path.lastIndexOf('.') + 1);
  const alias = ALIASES[norm];
  // The same name in another place (`isolationLevel` at the top, `timeoutMs` inside `transaction`).
  let found = paths.filter((path) => path !== prefix + typed && normalize(leaf(path)) === norm);
  if (alias !== undefined && paths.includes(alias) && !found.includes(alias)) found.push(alias);
  if (found.length === 0) {
    const prefixed = paths.filter((path) => normalize(leaf(path)).startsWith(norm));
    if (norm.length >= 3 && prefixed.length === 1) found = prefixed;
  }
  if (found.length === 0) {
    const limit = Math.max(1, Math.floor(norm.length / 3));
    let best = limit + 1;
    for (const path of paths) {
      const distance = editDistance(norm, normalize(leaf(path)));
      if (distance < best) {
        best = distance;
        found = [path];
      } else if (distance === best) found.push(path);
    }
  }
  // A name also close to one of pglock's at the top (`timeout`: `timeoutMs`, `transaction.timeout`).
  if (found.length > 0 && !found.some((path) => !path.includes('.'))) {
    const close = paths.filter(
      (path) => !path.includes('.') && path !== typed && normalize(path).startsWith(norm) && norm.length >= 4,
    );
    found.unshift(...close);
  }
  const shown = (path: string) =>
    prefix !== '' && !path.includes('.')
      ? `\`${path}\` (beside \`${prefix.slice(0, -1)}\`, not in it)`
      : `\`${path}\``;
  return found.length === 0 ? undefined : found.map(shown).join(' or ');
}

/** Case, `_` and `-` do not matter: `timeout_ms`, `TimeoutMS` and `timeoutMs` are one name. */
function normalize(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, '');
}

/** Optimal string alignment distance (Levenshtein plus swaps of neighbours). */
function editDistance(a: string, b: string): number {
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (previous2[j - 2] ?? 0) + 1);
      row.push(d);
    }
    previous2 = previous;
    previous = row;
  }
  return previous[b.length] ?? 0;
}
