import { readFile } from 'node:fs/promises';
import { deriveKey, lockKey } from '@pglock/core';
import { CliError, ExitCode } from './exit-codes.ts';

/** A lock name, optionally in a namespace (see docs/key-spec.md). */
export interface LockName {
  readonly name: string;
  readonly namespace?: string | undefined;
}

/** Where `pglock locks` learned a key's name. */
export type NameSource = 'names-file' | 'registry';

/** A name known for a key, and where it came from. */
export interface KnownName extends LockName {
  readonly source: NameSource;
}

/** Known names by bigint key (decimal text, as `pg_locks` keys are compared). */
export type NameIndex = Map<string, KnownName>;

/**
 * Parses a names file. Two formats:
 *
 * - lines: one name per line; `namespace<TAB>name` for a namespaced name; blank lines and lines
 *   starting with `#` are skipped. Nothing is trimmed but the line ending, since spaces are part of a name.
 * - JSON (the file starts with `[`): an array of names and `{ "name": …, "namespace": … }` objects.
 *
 * @example
 * ```ts
 * import { parseNames } from '@pglock/cli';
 *
 * parseNames('leaderboard\nmy-app\tnightly-report\n');
 * // [{ name: 'leaderboard' }, { name: 'nightly-report', namespace: 'my-app' }]
 * ```
 */
export function parseNames(text: string): LockName[] {
  if (text.trimStart().startsWith('[')) return parseJsonNames(text);
  const names: LockName[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '' || line.startsWith('#')) continue;
    const tab = line.indexOf('\t');
    names.push(tab === -1 ? { name: line } : { namespace: line.slice(0, tab), name: line.slice(tab + 1) });
  }
  return names;
}

function parseJsonNames(text: string): LockName[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CliError(`The names file is not valid JSON: ${(error as Error).message}`, ExitCode.usage);
  }
  if (!Array.isArray(value)) throw new CliError('A JSON names file must be an array.', ExitCode.usage);
  return value.map((item, i) => {
    if (typeof item === 'string') return { name: item };
    const { name, namespace } = (item ?? {}) as { name?: unknown; namespace?: unknown };
    if (typeof name !== 'string' || (namespace !== undefined && typeof namespace !== 'string')) {
      throw new CliError(
        `Names file entry ${i} must be a string or { "name": string, "namespace"?: string }.`,
        ExitCode.usage,
      );
    }
    return { name, namespace };
  });
}

/**
 * Reads and indexes a names file. Names without a namespace are indexed both bare and in
 * `namespace` (the `--namespace` option), since apps usually set one namespace for all their locks.
 *
 * @example
 * ```ts
 * import { loadNamesFile } from '@pglock/cli';
 *
 * const names = await loadNamesFile('./lock-names.txt', 'my-app');
 * ```
 */
export async function loadNamesFile(path: string, namespace?: string): Promise<NameIndex> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CliError(`Cannot read the names file ${path}: ${(error as Error).message}`, ExitCode.usage);
  }
  return indexNames(parseNames(text), 'names-file', namespace);
}

/**
 * Maps each name to its key. Invalid names (empty, lone surrogates) are reported, not skipped silently.
 *
 * @example
 * ```ts
 * import { indexNames } from '@pglock/cli';
 *
 * const index = indexNames([{ name: 'leaderboard' }], 'names-file');
 * index.get('7676066025365312217'); // { name: 'leaderboard', source: 'names-file' }
 * ```
 */
export function indexNames(names: readonly LockName[], source: NameSource, namespace?: string): NameIndex {
  const index: NameIndex = new Map();
  const add = (name: string, ns: string | undefined) => {
    let key: bigint;
    try {
      const resolved = lockKey(name, { namespace: ns });
      key = resolved.form === 'bigint' ? resolved.value : 0n;
    } catch (error) {
      throw new CliError(`Bad name ${JSON.stringify(name)}: ${(error as Error).message}`, ExitCode.usage);
    }
    if (!index.has(String(key))) index.set(String(key), { name, namespace: ns, source });
  };
  for (const entry of names) {
    add(entry.name, entry.namespace);
    if (entry.namespace === undefined && namespace !== undefined) add(entry.name, namespace);
  }
  return index;
}

/** True when `key` is what the key spec derives from the name (guards against stale registry rows). */
export function nameMatches(key: bigint, name: LockName): boolean {
  try {
    return deriveKey(name.name, name.namespace) === key;
  } catch {
    return false;
  }
}
