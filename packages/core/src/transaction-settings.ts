import { InvalidLockOptionsError } from './errors.ts';
import { checkOptionKeys, LOCK_OPTION_KEYS, TRANSACTION_SETTING_KEYS } from './option-keys.ts';

/** PostgreSQL's isolation levels, in the words of `SET TRANSACTION`. */
export type IsolationLevel = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

/** Prisma's names for the same levels; accepted everywhere, so a Prisma user's habit works. */
export type PrismaIsolationLevel = 'ReadUncommitted' | 'ReadCommitted' | 'RepeatableRead' | 'Serializable';

/**
 * How `withLock` opens its transaction: the one `transaction: { … }` option of every adapter. An
 * adapter whose ORM cannot honour a setting refuses it with `InvalidLockOptionsError`, before any SQL.
 *
 * @example
 * ```ts
 * import type { TransactionSettings } from '@pglock/core';
 *
 * const settings: TransactionSettings = { isolationLevel: 'serializable', accessMode: 'read only' };
 * ```
 */
export interface TransactionSettings {
  readonly isolationLevel?: IsolationLevel | PrismaIsolationLevel | undefined;
  readonly accessMode?: 'read only' | 'read write' | undefined;
  readonly deferrable?: boolean | undefined;
  /** Prisma only: how long the callback may run once the lock is held (Prisma's `timeout`, default 5000). */
  readonly timeout?: number | undefined;
  /** Prisma only: longest wait for a pooled connection (Prisma's `maxWait`, default 2000). */
  readonly maxWait?: number | undefined;
}

/**
 * The settings after validation: isolation level in PostgreSQL's words, nothing unknown.
 *
 * @example
 * ```ts
 * import { beginText, type CheckedTransactionSettings } from '@pglock/core/adapter';
 *
 * const begin = (settings: CheckedTransactionSettings) => client.query(beginText(settings));
 * ```
 */
export interface CheckedTransactionSettings {
  readonly isolationLevel: IsolationLevel | undefined;
  readonly accessMode: 'read only' | 'read write' | undefined;
  readonly deferrable: boolean | undefined;
  readonly timeout: number | undefined;
  readonly maxWait: number | undefined;
}

/**
 * A setting name of {@link TransactionSettings}.
 *
 * @example
 * ```ts
 * import type { TransactionSettingName } from '@pglock/core/adapter';
 *
 * // What the ORM's transaction API can honour; core refuses the others before any SQL.
 * const transactionSettings: readonly TransactionSettingName[] = ['isolationLevel', 'accessMode'];
 * ```
 */
export type TransactionSettingName = keyof TransactionSettings;

const ISOLATION: Record<string, IsolationLevel> = {
  'read uncommitted': 'read uncommitted',
  'read committed': 'read committed',
  'repeatable read': 'repeatable read',
  serializable: 'serializable',
  ReadUncommitted: 'read uncommitted',
  ReadCommitted: 'read committed',
  RepeatableRead: 'repeatable read',
  Serializable: 'serializable',
};
const ACCESS_MODES: readonly string[] = ['read only', 'read write'];
const MAX_TIMER_MS = 2 ** 31 - 1;

/** No settings: the ORM's defaults. */
export const NO_TRANSACTION_SETTINGS: CheckedTransactionSettings = Object.freeze({
  isolationLevel: undefined,
  accessMode: undefined,
  deferrable: undefined,
  timeout: undefined,
  maxWait: undefined,
});

/**
 * Validates `settings` against the fixed lists (they become SQL text in some ORMs, so nothing else
 * may pass) and against what the adapter supports. An unknown name (`{ isolation: … }`, or a lock
 * option such as `timeoutMs` put inside) is refused too: it would be ignored.
 *
 * @example
 * ```ts
 * import { checkTransactionSettings } from './transaction-settings.ts';
 *
 * checkTransactionSettings({ isolationLevel: 'Serializable' }, ['isolationLevel'], 'withLock').isolationLevel; // 'serializable'
 * ```
 */
export function checkTransactionSettings(
  settings: TransactionSettings | undefined,
  supported: readonly TransactionSettingName[],
  verb: string,
): CheckedTransactionSettings {
  if (settings === undefined) return NO_TRANSACTION_SETTINGS;
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
    throw new InvalidLockOptionsError(`${verb}: transaction must be an object of transaction settings.`);
  }
  checkOptionKeys(settings, TRANSACTION_SETTING_KEYS, verb, {
    prefix: 'transaction.',
    elsewhere: LOCK_OPTION_KEYS,
    listed: supported,
  });
  const { isolationLevel, accessMode, deferrable, timeout, maxWait } = settings;
  const given = { isolationLevel, accessMode, deferrable, timeout, maxWait };
  for (const [name, value] of Object.entries(given)) {
    if (value !== undefined && !supported.includes(name as TransactionSettingName)) {
      throw new InvalidLockOptionsError(
        `${verb}: transaction.${name} is not supported by this adapter (it supports ${supported.join(', ') || 'none'}).`,
      );
    }
  }
  let level: IsolationLevel | undefined;
  if (isolationLevel !== undefined) {
    level = typeof isolationLevel === 'string' ? ISOLATION[isolationLevel] : undefined;
    if (level === undefined || !Object.hasOwn(ISOLATION, isolationLevel)) {
      throw new InvalidLockOptionsError(
        `${verb}: transaction.isolationLevel must be one of read uncommitted, read committed, repeatable read, serializable (got ${String(isolationLevel)}).`,
      );
    }
  }
  if (accessMode !== undefined && !ACCESS_MODES.includes(accessMode)) {
    throw new InvalidLockOptionsError(
      `${verb}: transaction.accessMode must be 'read only' or 'read write' (got ${String(accessMode)}).`,
    );
  }
  if (deferrable !== undefined && typeof deferrable !== 'boolean') {
    throw new InvalidLockOptionsError(`${verb}: transaction.deferrable must be a boolean.`);
  }
  for (const [name, value] of [
    ['timeout', timeout],
    ['maxWait', maxWait],
  ] as const) {
    if (value !== undefined && (!Number.isInteger(value) || value < 1 || value > MAX_TIMER_MS)) {
      throw new InvalidLockOptionsError(
        `${verb}: transaction.${name} must be an integer from 1 to ${MAX_TIMER_MS} ms (got ${String(value)}).`,
      );
    }
  }
  return Object.freeze({ isolationLevel: level, accessMode, deferrable, timeout, maxWait });
}

const beginTexts = new Map<string, string>();

/**
 * `BEGIN` with the checked settings, for adapters that open transactions with SQL (node-postgres).
 * Built from the fixed lists only.
 *
 * @example
 * ```ts
 * import { beginText } from '@pglock/core/adapter';
 * import { checkTransactionSettings } from './transaction-settings.ts';
 *
 * beginText(checkTransactionSettings({ isolationLevel: 'serializable' }, ['isolationLevel'], 'withLock'));
 * // 'BEGIN ISOLATION LEVEL SERIALIZABLE'
 * ```
 */
export function beginText(settings: CheckedTransactionSettings): string {
  if (settings === NO_TRANSACTION_SETTINGS) return 'BEGIN';
  const { isolationLevel, accessMode, deferrable } = settings;
  const id = `${isolationLevel}|${accessMode}|${deferrable}`;
  let text = beginTexts.get(id);
  if (text === undefined) {
    const parts = ['BEGIN'];
    if (isolationLevel !== undefined) parts.push(`ISOLATION LEVEL ${isolationLevel.toUpperCase()}`);
    if (accessMode !== undefined) parts.push(accessMode.toUpperCase());
    if (deferrable !== undefined) parts.push(deferrable ? 'DEFERRABLE' : 'NOT DEFERRABLE');
    text = parts.join(' ');
    beginTexts.set(id, text);
  }
  return text;
}
