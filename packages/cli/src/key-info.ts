import { lockKey } from '@pglock/core';
import { lockTag } from '@pglock/core/internal';

/** What `pglock key` prints for a name. */
export interface KeyInfo {
  readonly name: string;
  readonly namespace: string | null;
  /** The bigint key as decimal text. */
  readonly key: string;
  /** The halves `pg_locks` shows for it (`objsubid` 1). */
  readonly classid: number;
  readonly objid: number;
  readonly objsubid: 1;
  /** A SQL expression computing the key on the server (docs/key-spec.md), for psql or other languages. */
  readonly sql: string;
}

const encoder = new TextEncoder();

/**
 * The key of a name (per docs/key-spec.md), its `pg_locks` halves and the SQL that computes it.
 * Throws `InvalidLockKeyError` for an empty name or namespace.
 *
 * @example
 * ```ts
 * import { keyInfo } from '@pglock/cli';
 *
 * keyInfo('leaderboard').key; // '7676066025365312217'
 * ```
 */
export function keyInfo(name: string, namespace?: string): KeyInfo {
  const key = lockKey(name, { namespace });
  if (key.form !== 'bigint') throw new Error('pglock bug: a name must give a bigint key');
  const { classid, objid } = lockTag(key);
  return {
    name,
    namespace: namespace ?? null,
    key: String(key.value),
    classid,
    objid,
    objsubid: 1,
    sql: keySql(name, namespace),
  };
}

/**
 * The SQL expression for a name's key. It is printed for people to paste, never run by pglock with the
 * name inside: literals are quoted for `standard_conforming_strings = on` (the default since 9.1).
 * `text` cannot hold U+0000, so such names are given as the hash input's bytes.
 *
 * @example
 * ```ts
 * import { keySql } from '@pglock/cli';
 *
 * keySql('leaderboard', 'my-app');
 * ```
 */
export function keySql(name: string, namespace?: string): string {
  let input: string;
  if (name.includes('\u0000')) {
    const bytes =
      namespace === undefined
        ? encoder.encode(name)
        : concat(encoder.encode(namespace), encoder.encode(name));
    input = `decode('${Buffer.from(bytes).toString('hex')}', 'hex')`;
  } else {
    const named = `convert_to(${literal(name)}, 'UTF8')`;
    input =
      namespace === undefined
        ? named
        : `convert_to(${literal(namespace)}, 'UTF8') || '\\x00'::bytea || ${named}`;
  }
  return `('x' || encode(substring(sha256(${input}) FROM 1 FOR 8), 'hex'))::bit(64)::bigint`;
}

function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

function concat(namespace: Uint8Array, name: Uint8Array): Uint8Array {
  const out = new Uint8Array(namespace.length + 1 + name.length);
  out.set(namespace, 0);
  out.set(name, namespace.length + 1);
  return out;
}
