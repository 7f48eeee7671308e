import { createHash } from 'node:crypto';

const NUL = new Uint8Array([0]);

/**
 * The key spec (docs/key-spec.md): the first 8 bytes of SHA-256 over `UTF-8(name)`, or over
 * `UTF-8(namespace) || 0x00 || UTF-8(name)`, read as a big-endian two's-complement int64.
 *
 * @example
 * ```ts
 * import { deriveKey } from '@pglock/core';
 *
 * const key: bigint = deriveKey('leaderboard', 'my-app');
 * ```
 */
export function deriveKey(name: string, namespace?: string): bigint {
  // Strings are hashed as UTF-8 (Node's default encoding for `update`); callers reject lone
  // surrogates first, so the UTF-8 form is well defined.
  const hash = createHash('sha256');
  if (namespace !== undefined) hash.update(namespace).update(NUL);
  return hash.update(name).digest().readBigInt64BE(0);
}
