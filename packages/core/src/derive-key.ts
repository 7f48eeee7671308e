import { createHash } from 'node:crypto';

const encoder = new TextEncoder();

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
  const hash = createHash('sha256');
  if (namespace !== undefined) {
    hash.update(encoder.encode(namespace));
    hash.update(new Uint8Array([0]));
  }
  hash.update(encoder.encode(name));
  return hash.digest().readBigInt64BE(0);
}
