import { readFileSync } from 'node:fs';

/** The block a README marks as its export list. */
export const EXPORTS_BEGIN = '<!-- pglock:exports -->';
export const EXPORTS_END = '<!-- /pglock:exports -->';

/**
 * The names a marked block of `markdown` documents: in a table, every code span of a row's first
 * cell (`` `withLock(key, fn, options?)` ``, `` `prisma.$withLock(…)` ``); elsewhere in the block,
 * every code span. A span's name is its leading identifier, after one `object.` (`prisma.`, `tx.`).
 * Throws when the block is missing, so a README that loses it fails the check rather than pass empty.
 *
 * @example
 * ```ts
 * import { documentedExports } from '@pglock/test-kit';
 *
 * documentedExports('<!-- pglock:exports -->\n| `withLock(key, fn)` | … |\n<!-- /pglock:exports -->'); // ['withLock']
 * ```
 */
export function documentedExports(markdown: string, begin = EXPORTS_BEGIN, end = EXPORTS_END): string[] {
  const start = markdown.indexOf(begin);
  const stop = markdown.indexOf(end, start);
  if (start === -1 || stop === -1) throw new Error(`no ${begin} … ${end} block`);
  const names = new Set<string>();
  for (const line of markdown.slice(start + begin.length, stop).split('\n')) {
    const trimmed = line.trim();
    // A table row's cells are split on unescaped pipes (`'done' \| 'busy'` stays in its cell).
    const text = trimmed.startsWith('|') ? (trimmed.slice(1).split(/(?<!\\)\|/)[0] ?? '') : trimmed;
    for (const [, span] of text.matchAll(/`([^`]+)`/g)) {
      const name = /^(?:[A-Za-z_]\w*\.)?(\$?[A-Za-z_]\w*)/.exec(span ?? '')?.[1];
      if (name !== undefined) names.add(name);
    }
  }
  return [...names];
}

/**
 * The names docs/scheduling.md gives for `packageName`: the first cells' code spans of its row in the
 * marked table of scheduling exports.
 *
 * @example
 * ```ts
 * import { scheduledExports } from '@pglock/test-kit';
 *
 * scheduledExports('@pglock/pg'); // ['runOnce', 'leader']
 * ```
 */
export function scheduledExports(packageName: string): string[] {
  const markdown = readFileSync(new URL('../../../docs/scheduling.md', import.meta.url), 'utf8');
  const begin = '<!-- pglock:scheduling-exports -->';
  const end = '<!-- /pglock:scheduling-exports -->';
  const start = markdown.indexOf(begin);
  const stop = markdown.indexOf(end, start);
  if (start === -1 || stop === -1) throw new Error(`docs/scheduling.md has no ${begin} block`);
  const row = markdown
    .slice(start, stop)
    .split('\n')
    .find((line) => line.trim().startsWith(`| \`${packageName}\``));
  if (row === undefined) throw new Error(`docs/scheduling.md lists no exports of ${packageName}`);
  const cells = row
    .trim()
    .slice(1)
    .split(/(?<!\\)\|/);
  return documentedExports(`${begin}\n${cells[1] ?? ''}\n${end}`, begin, end);
}
