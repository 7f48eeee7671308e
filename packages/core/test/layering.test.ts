import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The rooms of core, read from the sources: the protocol (every file outside drivers/) never
// imports a driver's room, so an app or an adapter that loads `@pglock/core` or
// `@pglock/core/adapter` loads no driver code (node:net for cancel requests, postgres.js's slices).
const src = join(dirname(fileURLToPath(import.meta.url)), '../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The modules a file imports (`import … from`, `export … from`, `import('…')`), comments left out. */
function importsOf(file: string): string[] {
  const code = readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
  const found = [...code.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'([^']+)'/gm)];
  return found.map((m) => m[1] as string);
}

const graph = new Map(
  sources(src).map((file) => [
    relative(src, file),
    importsOf(file).map((spec) =>
      spec.startsWith('.') ? relative(src, resolve(dirname(file), spec)) : spec,
    ),
  ]),
);

/** Every module `entry` loads, itself included. */
function closure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (module: string) => {
    if (seen.has(module)) return;
    seen.add(module);
    for (const next of graph.get(module) ?? []) visit(next);
  };
  visit(entry);
  return seen;
}

describe('layering', () => {
  it('the graph is read: every relative import names a source file', () => {
    expect(graph.size).toBeGreaterThan(30);
    for (const [file, imports] of graph) {
      for (const module of imports) {
        if (module.endsWith('.ts')) expect(graph.has(module), `${file} -> ${module}`).toBe(true);
      }
    }
  });

  it('no file outside drivers/ imports from drivers/', () => {
    const offending = [...graph].flatMap(([file, imports]) =>
      file.startsWith('drivers/')
        ? []
        : imports.filter((m) => m.startsWith('drivers/')).map((m) => `${file} -> ${m}`),
    );
    expect(offending).toEqual([]);
  });

  it('a driver room imports the protocol and node built-ins, never another package', () => {
    const offending = [...graph].flatMap(([file, imports]) =>
      file.startsWith('drivers/')
        ? imports.filter((m) => !m.endsWith('.ts') && !m.startsWith('node:')).map((m) => `${file} -> ${m}`)
        : [],
    );
    expect(offending).toEqual([]);
  });

  it.each(['index.ts', 'adapter.ts', 'internal.ts'])(
    '%s pulls in neither node:net nor postgres.js code',
    (entry) => {
      const loaded = [...closure(entry)];
      expect(
        loaded.filter((m) => m === 'node:net' || m.startsWith('drivers/') || /postgres/i.test(m)),
      ).toEqual([]);
    },
  );

  it('the node-postgres room loads no postgres.js code, and the postgres.js room no node:net', () => {
    expect([...closure('drivers/node-postgres.ts')].filter((m) => m.includes('postgres-js'))).toEqual([]);
    expect(
      [...closure('drivers/postgres-js.ts')].filter((m) => m === 'node:net' || m.includes('node-postgres')),
    ).toEqual([]);
  });
});
