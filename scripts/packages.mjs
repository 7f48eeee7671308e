// The published packages, read from packages/*/package.json (every one not `private`): the one list
// the others derive from. CI's pack lists and the examples check read it; typedoc.json's entry points
// and .changeset/config.json's fixed group are checked against it at `pnpm lint` time.
//
//   node scripts/packages.mjs            the published packages' folders, one a line (core first)
//   node scripts/packages.mjs --names    their package names
//   node scripts/packages.mjs --check    exit 1 when typedoc.json or .changeset/config.json disagree
//   node scripts/packages.mjs --write    rewrite both from the packages
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path) => JSON.parse(readFileSync(join(root, path), 'utf8'));

/**
 * The published packages: `{ dir, name, manifest }`, core first (every other one builds on it), then
 * by folder.
 * @returns {{ dir: string, name: string, manifest: Record<string, any> }[]}
 */
export function publishedPackages() {
  return readdirSync(join(root, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      let manifest;
      try {
        manifest = read(`packages/${entry.name}/package.json`);
      } catch {
        return [];
      }
      return manifest.private === true ? [] : [{ dir: entry.name, name: manifest.name, manifest }];
    })
    .sort((a, b) => (a.dir === 'core' ? -1 : b.dir === 'core' ? 1 : a.dir.localeCompare(b.dir)));
}

/**
 * TypeDoc's entry points: each published entry's source (its `@pglock/source` export), but a private
 * one (`./internal`) and a command-line tool's (a package with a `bin` is documented by its README).
 */
export function typedocEntryPoints(packages = publishedPackages()) {
  return packages.flatMap(({ dir, manifest }) => {
    if (manifest.bin !== undefined) return [];
    return Object.entries(manifest.exports ?? {}).flatMap(([entry, target]) => {
      const source = typeof target === 'object' ? target['@pglock/source'] : undefined;
      if (source === undefined || entry === './internal') return [];
      return [`packages/${dir}/${source.replace(/^\.\//, '')}`];
    });
  });
}

function expected() {
  const packages = publishedPackages();
  const typedoc = read('typedoc.json');
  const changesets = read('.changeset/config.json');
  return [
    ['typedoc.json', typedoc, { ...typedoc, entryPoints: typedocEntryPoints(packages) }],
    ['.changeset/config.json', changesets, { ...changesets, fixed: [packages.map((p) => p.name)] }],
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const flag = process.argv[2];
  if (flag === '--check' || flag === '--write') {
    let stale = 0;
    for (const [path, now, want] of expected()) {
      if (JSON.stringify(now) === JSON.stringify(want)) continue;
      if (flag === '--write') writeFileSync(join(root, path), `${JSON.stringify(want, null, 2)}\n`);
      else {
        stale++;
        console.error(`${path} does not list the published packages; run: node scripts/packages.mjs --write`);
      }
    }
    process.exit(stale === 0 ? 0 : 1);
  }
  for (const p of publishedPackages()) console.log(flag === '--names' ? p.name : p.dir);
}
