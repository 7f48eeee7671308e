// Typechecks the code a user copies: every ```ts example in the JSDoc of the published packages'
// sources, and every ```ts / ```typescript block of README.md, packages/*/README.md and docs/*.md.
//
// A snippet is a sketch: the values it uses without defining them (`id`, `amount`, `db`) are declared
// `any` for it, found by a first compile that resolves nothing. A few names mean the same thing in
// every snippet and get their real type instead (scripts/doc-examples/context.ts: `pool`, `Database`).
// What is left must compile: the names it imports exist and are called the way their types say.
// Imports of `./schema.ts` and `./generated/prisma/client.ts` (the app's Drizzle schema and Prisma
// client) get the fixtures in scripts/doc-examples: a Drizzle schema, and a Prisma client generated
// from schema.prisma there with the Prisma CLI under test.
//
// A snippet is a whole module unless it says otherwise: a Markdown block right after the line
// `<!-- fragment -->` continues the block before it in the same file (a `locks` defined there is the
// same `locks`), and is checked appended to it. Keep fragments few: a reader copies one block at a time.
//
// Every bare import (of a snippet, a fixture, the packages' sources) is pinned with `paths` to one
// file, so @pglock/* (their sources, by the `@pglock/source` condition) and the snippets see the same
// ORM release.
//
// Usage: `pnpm check:examples` (the workspace's ORMs, TypeScript 5.9's API; exits 1 and prints the
// errors otherwise). Options, for scripts/check-doc-examples-versions.sh:
//   --modules DIR  drizzle-orm, kysely and @prisma/* from DIR/node_modules (an end of a peer range);
//                  the Prisma client is generated with DIR's prisma CLI
//   --tsc FILE     check with that compiler's command line (TypeScript 7's `tsc`, which has no
//                  compiler API) instead of the workspace's TypeScript API
//   --report FILE  a vitest-style JSON report: one passed or failed test per example
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import ts from 'typescript';
import { generatePrismaClient } from '../packages/test-kit/src/prisma-generate.ts';
import { publishedPackages } from './packages.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = join(root, 'scripts', 'doc-examples');
const packages = publishedPackages().map((p) => p.dir);
const docs = [
  'README.md',
  ...packages.map((name) => `packages/${name}/README.md`),
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
].filter((path) => existsSync(join(root, path)));
// Where a bare import resolves when no --modules DIR takes it: the workspace packages that depend on it.
const installs = [
  ...packages.map((name) => join(root, 'packages', name)),
  join(root, 'packages', 'test-kit'),
  root,
];
const versioned = /^(drizzle-orm|kysely|@prisma\/[^/]+)(\/|$)/;
// Cannot find name 'x' (and its "did you mean" forms), and a shorthand property with no value in scope.
const missingName = new Set([2304, 2552, 2582, 18004]);

const { values: args } = parseArgs({
  options: { modules: { type: 'string' }, tsc: { type: 'string' }, report: { type: 'string' } },
});
const modules = args.modules === undefined ? undefined : join(args.modules);

interface Example {
  /** Where it is written, relative to the repository. */
  readonly source: string;
  /** The line of its opening fence (or JSDoc fence) in `source`. */
  readonly line: number;
  /** The code before it that it continues (a fragment's chain), else ''. */
  readonly before: string;
  readonly code: string;
  /** The copy that is compiled. */
  readonly file: string;
}

function sourcesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesOf(path);
    return entry.name.endsWith('.ts') && !entry.name.includes('.test') ? [path] : [];
  });
}

function jsdocExamples(path: string): { line: number; code: string }[] {
  const found: { line: number; code: string }[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*\*\s*```ts\s*$/.test(lines[i] as string)) continue;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*\*\s*```\s*$/.test(lines[j] as string); j++) {
      body.push((lines[j] as string).replace(/^\s*\* ?/, ''));
    }
    found.push({ line: i + 1, code: body.join('\n') });
    i = j;
  }
  return found;
}

function markdownExamples(path: string): { line: number; code: string; fragment: boolean }[] {
  const found: { line: number; code: string; fragment: boolean }[] = [];
  const lines = readFileSync(path, 'utf8').split('\n');
  let previous = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const open = /^(\s*)(`{3,})\s*(\w+)?.*$/.exec(line);
    if (!open) {
      if (line.trim() !== '') previous = line;
      continue;
    }
    const [, indent = '', fence = '```', lang = ''] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^\\s*${fence}\\s*$`).test(lines[j] as string); j++) {
      body.push(
        (lines[j] as string).startsWith(indent)
          ? (lines[j] as string).slice(indent.length)
          : (lines[j] as string),
      );
    }
    if (lang === 'ts' || lang === 'typescript') {
      found.push({
        line: i + 1,
        code: body.join('\n'),
        fragment: /^\s*<!--\s*fragment\b.*-->\s*$/.test(previous),
      });
    }
    previous = lines[j] ?? '';
    i = j;
  }
  return found;
}

// The names scripts/doc-examples/context.ts gives a type, and whether each is a type or a value.
const context = new Map<string, 'type' | 'value'>();
for (const [, kind, name] of readFileSync(join(fixtures, 'context.ts'), 'utf8').matchAll(
  /^export (?:declare )?(interface|type|const|function|class) (\w+)/gm,
)) {
  context.set(name as string, kind === 'interface' || kind === 'type' ? 'type' : 'value');
}

// One folder per run (under the repository, whose package.json makes the copies ES modules).
const out = join(root, '.doc-examples', String(process.pid));
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const fileName = (source: string, line: number) => join(out, `${source.replaceAll('/', '_')}-${line}.ts`);

const examples: Example[] = [];
for (const name of packages) {
  const src = join(root, 'packages', name, 'src');
  for (const path of sourcesOf(src)) {
    for (const { line, code } of jsdocExamples(path)) {
      // A relative import names a file beside the source, not beside the copy.
      const resolved = code.replace(
        /from '(\.{1,2}\/[^']+)'/g,
        (_, spec: string) => `from '${join(dirname(path), spec)}'`,
      );
      const source = relative(root, path);
      examples.push({ source, line, before: '', code: resolved, file: fileName(source, line) });
    }
  }
}

// The Prisma client the snippets import, generated with the Prisma CLI under test (once per version:
// generatePrismaClient skips an unchanged schema).
const prismaFrom = modules ?? join(root, 'packages', 'prisma');
const prismaVersion = JSON.parse(
  readFileSync(join(prismaFrom, 'node_modules', 'prisma', 'package.json'), 'utf8'),
).version as string;
const prismaDir = join(root, '.pglock-tmp', 'doc-examples', `prisma-${prismaVersion}`);
mkdirSync(prismaDir, { recursive: true });
// ES modules, as the snippets are.
writeFileSync(join(prismaDir, 'package.json'), '{ "type": "module" }\n');
writeFileSync(join(prismaDir, 'schema.prisma'), readFileSync(join(fixtures, 'schema.prisma')));
await generatePrismaClient(join(prismaDir, 'schema.prisma'), join(prismaDir, 'generated'), prismaFrom);
const prismaClient = join(prismaDir, 'generated', 'prisma', 'client.ts');
const appImports: Record<string, string> = {
  './schema.ts': join(fixtures, 'schema.ts'),
  './generated/prisma/client.ts': prismaClient,
};

for (const doc of docs) {
  let chain = '';
  for (const { line, code, fragment } of markdownExamples(join(root, doc))) {
    const resolved = code.replace(/from '(\.[^']+)'/g, (whole, spec: string) =>
      appImports[spec] === undefined ? whole : `from '${appImports[spec]}'`,
    );
    const before = fragment ? chain : '';
    examples.push({ source: doc, line, before, code: resolved, file: fileName(doc, line) });
    chain = `${before}${resolved}\n`;
  }
}

const lineCount = (text: string) => (text === '' ? 0 : text.split('\n').length - 1);
const write = (example: Example, declared: readonly string[]) => {
  const typed = declared.filter((n) => context.has(n));
  const loose = declared.filter((n) => !context.has(n));
  const imports =
    typed.length === 0
      ? ''
      : `import { ${typed.map((n) => (context.get(n) === 'type' ? `type ${n}` : n)).join(', ')} } from '${join(fixtures, 'context.ts')}'; `;
  // A missing name may be used as a value or as a type (`Schema`): declare it as both.
  const prelude = loose.map((n) => `type ${n} = any; declare const ${n}: any;`).join(' ');
  // Line 1 holds the prelude, so error lines map to the example's lines + 1 (after what it continues).
  writeFileSync(example.file, `${imports}${prelude} export {};\n${example.before}${example.code}\n`);
};

const config = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile).config;
const options = ts.convertCompilerOptionsFromJson(config.compilerOptions, root).options;
// A sketch's callbacks take parameters from undeclared (any) values: their implicit any is the point.
Object.assign(options, {
  noEmit: true,
  noUnusedLocals: false,
  noUnusedParameters: false,
  noImplicitAny: false,
});

// First compile: which names each example uses without defining them. Resolving nothing keeps it fast,
// and an import's names are bound even when its module is not found.
for (const example of examples) write(example, []);
const files = examples.map((e) => e.file);
const free = new Map<string, Set<string>>();
{
  const program = ts.createProgram(files, { ...options, noResolve: true });
  // Without resolving, @types/node's references are not read either: a global it declares
  // (setInterval) is not a free name.
  const empty = join(out, 'globals.ts');
  writeFileSync(empty, 'export {};\n');
  const globals = ts.createProgram([empty], options);
  const inScope = new Set(
    globals
      .getTypeChecker()
      .getSymbolsInScope(
        globals.getSourceFile(empty) as ts.SourceFile,
        ts.SymbolFlags.Value | ts.SymbolFlags.Type,
      )
      .map((symbol) => symbol.name),
  );
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (!missingName.has(d.code) || !d.file) continue;
    const match = /'([^']+)'/.exec(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    if (!match || inScope.has(match[1] as string)) continue;
    const names = free.get(d.file.fileName) ?? new Set<string>();
    names.add(match[1] as string);
    free.set(d.file.fileName, names);
  }
}
for (const example of examples) write(example, [...(free.get(example.file) ?? [])]);

// Every bare import of the program, pinned to one file.
const specifiers = new Set<string>();
const importsOf = (text: string) => {
  for (const { fileName: spec } of ts.preProcessFile(text, true, true).importedFiles) {
    if (!spec.startsWith('.') && !spec.startsWith('/') && !spec.startsWith('node:')) specifiers.add(spec);
  }
};
for (const file of files) importsOf(readFileSync(file, 'utf8'));
for (const name of packages)
  for (const path of sourcesOf(join(root, 'packages', name, 'src'))) importsOf(readFileSync(path, 'utf8'));
importsOf(readFileSync(join(fixtures, 'schema.ts'), 'utf8'));
importsOf(readFileSync(join(fixtures, 'context.ts'), 'utf8'));
for (const path of sourcesOf(dirname(prismaClient))) importsOf(readFileSync(path, 'utf8'));
const paths: Record<string, string[]> = {};
const unresolved: string[] = [];
for (const spec of [...specifiers].sort()) {
  const own = /^@pglock\/([^/]+)/.exec(spec);
  const from =
    own !== null
      ? [join(root, 'packages', own[1] as string)]
      : modules !== undefined && versioned.test(spec)
        ? [modules]
        : installs;
  const found = from
    .map(
      (dir) =>
        ts.resolveModuleName(
          spec,
          join(dir, 'index.ts'),
          options,
          ts.sys,
          undefined,
          undefined,
          ts.ModuleKind.ESNext,
        ).resolvedModule?.resolvedFileName,
    )
    .find((file) => file !== undefined);
  if (found === undefined) unresolved.push(spec);
  else paths[spec] = [found];
}
if (unresolved.length > 0) console.error(`not found, left to the compiler: ${unresolved.join(', ')}`);

interface Failure {
  readonly file: string;
  readonly line: number;
  readonly message: string;
}
const failures: Failure[] = [];

if (args.tsc === undefined) {
  const program = ts.createProgram(files, { ...options, paths });
  for (const d of ts.getPreEmitDiagnostics(program)) {
    if (!d.file || d.start === undefined || !files.includes(d.file.fileName)) continue;
    failures.push({
      file: d.file.fileName,
      line: d.file.getLineAndCharacterOfPosition(d.start).line + 1,
      message: `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
    });
  }
} else {
  // The compiler's own tsconfig, holding what the API run gets: the base options, the overrides, paths.
  // Less `esModuleInterop`, which TypeScript 7 removed (as if true; the snippets import no CommonJS
  // default that tells them apart).
  const { esModuleInterop, ...base } = config.compilerOptions as Record<string, unknown>;
  const compilerOptions = {
    ...base,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    noImplicitAny: false,
    paths,
  };
  const tsconfig = join(out, 'tsconfig.json');
  writeFileSync(tsconfig, JSON.stringify({ compilerOptions, files }, null, 2));
  const result = await promisify(execFile)(
    process.execPath,
    [args.tsc, '-p', tsconfig, '--pretty', 'false'],
    {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    },
  ).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? 1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  );
  let reported = 0;
  let last: Failure | undefined;
  for (const text of `${result.stdout}\n${result.stderr}`.split('\n')) {
    const match = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/.exec(text);
    if (match || /^error TS\d+/.test(text)) reported++;
    if (match && files.includes(resolve(root, match[1] as string))) {
      last = {
        file: resolve(root, match[1] as string),
        line: Number(match[2]),
        message: `${match[4]}: ${match[5]}`,
      };
      failures.push(last);
    } else if (match?.[1]?.endsWith('tsconfig.json') || /^error TS\d+/.test(text)) {
      // An error of the configuration, not of a file: the run checked nothing.
      last = { file: '', line: 0, message: text };
      failures.push(last);
    } else if (match) {
      // Outside the examples (the generated Prisma client, a package's source): not theirs to report.
      last = undefined;
    } else if (last && /^\s+\S/.test(text)) {
      last = { ...last, message: `${last.message} ${text.trim()}` };
      failures[failures.length - 1] = last;
    }
  }
  if (result.code !== 0 && reported === 0) {
    failures.push({
      file: '',
      line: 0,
      message: `${args.tsc} exited ${result.code}: ${result.stderr || result.stdout}`,
    });
  }
}

let errors = 0;
const failed = new Set<Example>();
for (const failure of failures) {
  const example = examples.find((e) => e.file === failure.file);
  if (!example) {
    errors++;
    console.error(failure.message);
    continue;
  }
  // An error in what a fragment continues is reported once, by the block it is in.
  const line = failure.line - 1 - lineCount(example.before);
  if (line < 1) continue;
  errors++;
  failed.add(example);
  const kind = example.source.endsWith('.md') ? 'snippet' : 'example';
  console.error(`${example.source}:${example.line + line} (${kind}): ${failure.message}`);
}
const jsdoc = examples.filter((e) => !e.source.endsWith('.md')).length;
const compiler =
  args.tsc === undefined
    ? `TypeScript ${ts.version}`
    : `TypeScript ${JSON.parse(readFileSync(join(dirname(args.tsc), '..', 'package.json'), 'utf8')).version} (tsc)`;
console.log(
  `${jsdoc} JSDoc examples and ${examples.length - jsdoc} Markdown snippets checked (${compiler}${modules ? `, ORMs from ${modules}` : ''}), ${errors} error(s)`,
);
if (args.report !== undefined) {
  // A configuration error fails the run as one test more.
  const broken = errors > 0 && failed.size === 0 ? 1 : 0;
  writeFileSync(
    args.report,
    JSON.stringify({
      numPassedTests: examples.length - failed.size,
      numFailedTests: failed.size + broken,
      numPendingTests: 0,
    }),
  );
}
rmSync(out, { recursive: true, force: true });
process.exit(errors > 0 ? 1 : 0);
