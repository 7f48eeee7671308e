// The docs site (VitePress): docs/*.md, the README of the repository, of every package and example,
// and the bench results, as they are on GitHub, plus the TypeDoc API reference (`pnpm docs:api`,
// copied in as /api/). `pnpm docs:build` writes it to docs/.vitepress/dist (gitignored).
//
// The pages stay GitHub-readable Markdown; what differs on the site is done here, not in the files:
// each README is its folder's index page; a link to a folder goes to its README; a link to a file that
// is not a page (source, a config, a patch) goes to that file on GitHub, after checking that it exists.
// VitePress fails the build on a dead link to a page (its default, kept on), and this config fails it
// on a link to a file or folder that does not exist.
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DefaultTheme, defineConfig } from 'vitepress';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const github = 'https://github.com/pglock/pglock';
const blob = `${github}/blob/main`;
const skipped = new Set(['node_modules', 'dist', '.git', '.turbo', '.vitepress', 'api', 'tarballs', 'out']);

/** Repository-relative paths (posix) of the files that are pages. */
function isPage(path: string): boolean {
  return (
    path === 'README.md' ||
    /^docs\/[^/]+\.md$/.test(path) ||
    /^(packages|examples)\/[^/]+\/(README|CHANGELOG)\.md$/.test(path) ||
    /^packages\/bench\/results\/(node-24\/)?latest\.md$/.test(path)
  );
}

function markdownFiles(dir = repo): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.') || skipped.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [relative(repo, path).split('\\').join('/')] : [];
  });
}

const allMarkdown = markdownFiles();
const pages = allMarkdown.filter(isPage);
const rewritten = (path: string) => path.replace(/(^|\/)README\.md$/, '$1index.md');
const missing = new Set<string>();

/** A page's title: its first `# ` heading without Markdown. */
function titleOf(path: string): string {
  const heading = /^# (.+)$/m.exec(readFileSync(join(repo, path), 'utf8'))?.[1] ?? path;
  return heading.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
}

/** Where a repository-relative link of `from` should point on the site, or undefined to keep it. */
function siteHref(from: string, link: string): string | undefined {
  // A package README links to the repository by its GitHub URL (it is shown on npm too): on the site,
  // that is the page itself (GitHub's `#readme` anchor is no heading here).
  const ours = /^https:\/\/github\.com\/pglock\/pglock(?:\/(?:blob|tree)\/main\/([^#?]*))?(#.*)?$/.exec(link);
  const href =
    ours && (ours[1] !== undefined || ours[2] === '#readme')
      ? `/${ours[1] ?? 'README.md'}${ours[2] === '#readme' ? '' : (ours[2] ?? '')}`
      : link;
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('#') || href.startsWith('//')) return undefined;
  const [pathPart = '', hash = ''] = href.split(/(?=#)/);
  const target = posix.normalize(
    pathPart.startsWith('/') ? pathPart.slice(1) : posix.join(posix.dirname(from), decodeURI(pathPart)),
  );
  const absolute = join(repo, target);
  if (!existsSync(absolute)) {
    missing.add(`${from}: ${href}`);
    return undefined;
  }
  const relativeTo = (path: string) => posix.relative(posix.dirname(from), path) || '.';
  if (statSync(absolute).isDirectory()) {
    const readme = posix.join(target, 'README.md');
    if (pages.includes(readme)) return `${relativeTo(rewritten(readme))}${hash}`;
    return `${github}/tree/main/${target}`;
  }
  if (pages.includes(target)) return `${relativeTo(rewritten(target))}${hash}`;
  return `${blob}/${target}${hash}`;
}

const docsOrder = [
  'which-verb',
  'choosing-scope',
  'waiting',
  'scheduling',
  'poolers',
  'migrating',
  'comparison',
  'faq',
  'protocol',
  'key-spec',
  'reliability',
  'benchmarks',
  'testing',
  'releasing',
];
const rank = (path: string) => {
  const at = docsOrder.indexOf(posix.basename(path, '.md'));
  return at === -1 ? docsOrder.length : at;
};
const item = (path: string): DefaultTheme.SidebarItem => ({
  text: titleOf(path),
  link: `/${rewritten(path)
    .replace(/index\.md$/, '')
    .replace(/\.md$/, '')}`,
});
const section = (text: string, paths: readonly string[]): DefaultTheme.SidebarItem => ({
  text,
  items: paths.map(item),
});
const under = (prefix: RegExp) => pages.filter((p) => prefix.test(p)).sort();
// Every page is in the sidebar, new ones too (a doc added to docs/ appears without editing this file).
const sidebar: DefaultTheme.SidebarItem[] = [
  section('Guide', [
    'README.md',
    ...pages.filter((p) => p.startsWith('docs/')).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)),
  ]),
  section('Packages', [
    ...under(/^packages\/core\//),
    ...under(/^packages\/(?!core\/)[^/]+\/README\.md$/),
    ...under(/^packages\/[^/]+\/CHANGELOG\.md$/),
  ]),
  section('Examples', under(/^examples\//)),
  section('Bench results', under(/^packages\/bench\/results\//)),
];

export default defineConfig({
  title: 'pglock',
  description: 'PostgreSQL advisory locks for Node.js: node-postgres, Prisma, Drizzle, Kysely.',
  srcDir: '..',
  // Every Markdown file that is not a page, and the folders the walk above skips.
  srcExclude: [
    ...allMarkdown.filter((path) => !isPage(path)),
    ...[...skipped].map((name) => `**/${name}/**`),
  ],
  rewrites: Object.fromEntries(pages.filter((p) => rewritten(p) !== p).map((p) => [p, rewritten(p)])),
  // No request to anything but the site itself: the browser check fails on any other.
  head: [],
  markdown: {
    config(md) {
      md.core.ruler.push('pglock-repository-links', (state) => {
        const from = relative(repo, state.env.path as string)
          .split('\\')
          .join('/');
        for (const block of state.tokens) {
          for (const token of block.children ?? []) {
            if (token.type !== 'link_open') continue;
            const href = token.attrGet('href');
            const next = href === null ? undefined : siteHref(from, href);
            if (next !== undefined) token.attrSet('href', next);
          }
        }
      });
    },
  },
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/docs/which-verb' },
      { text: 'Packages', link: '/packages/core/' },
      { text: 'API', link: '/api/index.html', target: '_self' },
    ],
    sidebar,
    search: { provider: 'local' },
    outline: [2, 3],
    socialLinks: [{ icon: 'github', link: github }],
  },
  buildEnd(site) {
    if (missing.size > 0) {
      throw new Error(`links to files or folders that do not exist:\n  ${[...missing].join('\n  ')}`);
    }
    const api = resolve(repo, 'docs/api');
    if (!existsSync(join(api, 'index.html'))) throw new Error('no docs/api: run `pnpm docs:api` first');
    cpSync(api, join(site.outDir, 'api'), { recursive: true });
  },
});
