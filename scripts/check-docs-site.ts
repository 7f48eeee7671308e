// `pnpm docs:check [-- --report file.json] [-- --all-api]`: the built docs site (`pnpm docs:build`
// first) in a real browser. Serves docs/.vitepress/dist on 127.0.0.1 and opens in headless Chromium
// (Debian's /usr/bin/chromium through playwright-core; CHROMIUM overrides the path) every VitePress
// page, and of TypeDoc's API reference its index, its hierarchy and the first page of each kind
// (class, function, interface, module, type, variable; `--all-api`: every page): each must render (a
// heading in its content), log no console error and load nothing that fails. Every API page is also
// read as a file: it has a heading, and each local link and asset it names exists. Then the local
// search must find a known term and lead to its page. Prints each failure and a count; `--report`
// also writes a vitest-style JSON report.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { extname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium, type Page } from 'playwright-core';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: { report: { type: 'string' }, 'all-api': { type: 'boolean', default: false } },
});
const site = fileURLToPath(new URL('../docs/.vitepress/dist', import.meta.url));
// biome-ignore lint/suspicious/noUndeclaredEnvVars: a path for this script, not a turbo task's input
const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
// A term only one part of the docs explains, and the page the search must lead to.
const searchTerm = 'hashtext';
const searchPage = '/docs/migrating.html';

const types: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)])),
  );
  return nested.flat();
}

const allPages = (await files(site).catch(() => []))
  .filter((file) => file.endsWith('.html') && !file.endsWith('/404.html'))
  .map((file) => `/${relative(site, file).split('\\').join('/')}`)
  .sort();
if (allPages.length === 0) throw new Error(`no pages in ${site}: run \`pnpm docs:build\` first`);
const apiPages = allPages.filter((path) => path.startsWith('/api/'));
// TypeDoc renders every page of a kind from one template: in the browser, one of each (and every
// page with --all-api), as the whole set costs minutes of CI on two cores; all are read as files below.
const apiSample = apiPages.filter(
  (path, i) =>
    values['all-api'] ||
    !path.slice(5).includes('/') ||
    apiPages[i - 1]?.split('/')[2] !== path.split('/')[2],
);
const pages = [...allPages.filter((path) => !path.startsWith('/api/')), ...apiSample];

const server = createServer(async (request, response) => {
  const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
  const file = normalize(join(site, path.endsWith('/') ? `${path}index.html` : path));
  if (!file.startsWith(site)) {
    response.writeHead(403).end();
    return;
  }
  try {
    const body = await readFile(file);
    response.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' });
    response.end(body);
  } catch {
    response.writeHead(404, { 'content-type': 'text/html' }).end(await readFile(join(site, '404.html')));
  }
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

const profile = await mkdtemp(join(tmpdir(), 'pglock-docs-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
  ],
});
const results: { fullName: string; status: 'passed' | 'failed'; failureMessages: string[] }[] = [];
const started = performance.now();

// Every API page as a file: a heading, and no local link or asset that is missing.
for (const path of apiPages) {
  const html = await readFile(join(site, path), 'utf8');
  const problems: string[] = [];
  if (!/<h1[^>]*>[^<]*\S/.test(html) && !/<h2[^>]*>[^<]*\S/.test(html)) problems.push('no heading');
  for (const [, target] of html.matchAll(/(?:href|src)="([^"#?]+)/g)) {
    if (/^[a-z]+:/i.test(target!) || target!.startsWith('//')) continue;
    const file = normalize(join(site, target!.startsWith('/') ? target! : join(path, '..', target!)));
    if (
      !(await readFile(file).then(
        () => true,
        () => false,
      ))
    )
      problems.push(`missing ${target}`);
  }
  record(`API page ${path}: a heading, every local link and asset exists`, problems);
}

/** Collects what a page reports while `fn` runs on it: console errors, page errors, failed loads. */
async function watching(page: Page, fn: () => Promise<void>): Promise<string[]> {
  const problems: string[] = [];
  const onConsole = (message: { type(): string; text(): string }) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  };
  const onPageError = (error: Error) => problems.push(`page error: ${error.message}`);
  const onResponse = (response: { status(): number; url(): string }) => {
    if (response.status() >= 400) problems.push(`${response.status()} for ${response.url()}`);
  };
  // A navigation cancels what the page was still fetching (VitePress prefetches the chunks of linked
  // pages): ERR_ABORTED is that, not a failure. Anything refused or missing is.
  const onFailed = (request: { url(): string; failure(): { errorText: string } | null }) => {
    const reason = request.failure()?.errorText ?? '';
    if (reason !== 'net::ERR_ABORTED') problems.push(`request failed: ${request.url()} (${reason})`);
  };
  page.on('console', onConsole);
  page.on('pageerror', onPageError);
  page.on('response', onResponse);
  page.on('requestfailed', onFailed);
  try {
    await fn();
  } catch (error) {
    problems.push(error instanceof Error ? error.message.split('\n')[0]! : String(error));
  } finally {
    page.off('console', onConsole);
    page.off('pageerror', onPageError);
    page.off('response', onResponse);
    page.off('requestfailed', onFailed);
  }
  return problems;
}

function record(name: string, problems: string[]): void {
  results.push({
    fullName: name,
    status: problems.length === 0 ? 'passed' : 'failed',
    failureMessages: problems,
  });
  if (problems.length > 0) console.log(`FAIL ${name}\n  ${problems.join('\n  ')}`);
}

try {
  // Nothing but the site itself may be asked for (no fonts or scripts from elsewhere).
  await context.route(
    (url) => url.origin !== origin,
    (route) => route.abort(),
  );
  // A few tabs at once: each page waits on its own loads far more than on the CPU.
  const queue = [...pages];
  const tabs = await Promise.all(
    Array.from({ length: 2 }, async (_, i) => context.pages()[i] ?? (await context.newPage())),
  );
  await Promise.all(
    tabs.map(async (tab) => {
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
        const problems = await watching(tab, async () => {
          await tab.goto(`${origin}${path}`, { waitUntil: 'load' });
          // VitePress pages: the content's first heading; TypeDoc pages: the page title heading.
          const heading = tab.locator(path.startsWith('/api/') ? 'h1, h2' : '.vp-doc h1').first();
          await heading.waitFor({ state: 'visible', timeout: 10_000 });
          if (!(await heading.textContent())?.trim()) throw new Error('the heading is empty');
        });
        record(`renders ${path}`, problems);
      }
    }),
  );
  const page = tabs[0]!;

  const problems = await watching(page, async () => {
    await page.goto(`${origin}/index.html`, { waitUntil: 'load' });
    await page.locator('.VPNavBarSearch button').click();
    const input = page.locator('.VPLocalSearchBox input');
    await input.waitFor({ state: 'visible', timeout: 5_000 });
    await input.fill(searchTerm);
    const hit = page.locator(`.VPLocalSearchBox a.result[href^="${searchPage}"]`).first();
    await hit.waitFor({ state: 'visible', timeout: 10_000 });
    await hit.click();
    await page.waitForURL(`${origin}${searchPage}**`, { timeout: 5_000 });
    await page.locator('.vp-doc h1').first().waitFor({ state: 'visible', timeout: 5_000 });
  });
  record(`the local search finds "${searchTerm}" and opens ${searchPage}`, problems);
} finally {
  await context.close();
  server.close();
  await rm(profile, { recursive: true, force: true });
}

const failed = results.filter((r) => r.status === 'failed').length;
const passed = results.length - failed;
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `docs site: ${pages.length} pages and the search in Chromium, ${apiPages.length} API pages read as files (${results.length} checks) in ${seconds} s`,
);
console.log(`${passed} passed, ${failed} failed`);
if (values.report) {
  await writeFile(
    values.report,
    `${JSON.stringify({
      numPassedTests: passed,
      numFailedTests: failed,
      numPendingTests: 0,
      testResults: [
        { name: 'docs site', status: failed === 0 ? 'passed' : 'failed', assertionResults: results },
      ],
    })}\n`,
  );
}
process.exitCode = failed === 0 ? 0 : 1;
