// Typechecks every ```ts example in the JSDoc of the published packages' sources. An example is a
// sketch: the values it uses without defining them (`pool`, `db`, `run`) are declared `any` for it,
// found by a first compile; what is left must compile — the names it imports exist and are called
// the way their types say. Usage: `pnpm check:examples` (exits 1 and prints the errors otherwise).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { publishedPackages } from './packages.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const packages = publishedPackages().map((p) => p.dir);
// Cannot find name 'x' (and its "did you mean" forms), and a shorthand property with no value in scope.
const missingName = new Set([2304, 2552, 2582, 18004]);

interface Example {
  readonly source: string;
  readonly line: number;
  readonly file: string;
  code: string;
}

function sourcesOf(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesOf(path);
    return entry.name.endsWith('.ts') && !entry.name.includes('.test') ? [path] : [];
  });
}

function examplesIn(path: string): { line: number; code: string }[] {
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

function compile(files: string[], options: ts.CompilerOptions): readonly ts.Diagnostic[] {
  const program = ts.createProgram(files, options);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file !== undefined && files.includes(d.file.fileName));
}

const config = ts.readConfigFile(join(root, 'tsconfig.base.json'), ts.sys.readFile).config;
const options = ts.convertCompilerOptionsFromJson(config.compilerOptions, root).options;
// A sketch's callbacks take parameters from undeclared (any) values: their implicit any is the point.
Object.assign(options, {
  noEmit: true,
  noUnusedLocals: false,
  noUnusedParameters: false,
  noImplicitAny: false,
});

let failures = 0;
let total = 0;
for (const name of packages) {
  const pkg = join(root, 'packages', name);
  const out = join(pkg, '.doc-examples');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const examples: Example[] = [];
  for (const source of sourcesOf(join(pkg, 'src'))) {
    for (const { line, code } of examplesIn(source)) {
      const file = join(out, `${relative(join(pkg, 'src'), source).replaceAll('/', '_')}-${line}.ts`);
      // A relative import names a file beside the source, not beside the copy.
      const resolved = code.replace(
        /from '(\.{1,2}\/[^']+)'/g,
        (_, spec: string) => `from '${join(dirname(source), spec)}'`,
      );
      examples.push({ source, line, file, code: resolved });
    }
  }
  const write = (example: Example, declared: readonly string[]) => {
    // A missing name may be used as a value or as a type (`Database`): declare it as both.
    const prelude = declared.map((n) => `type ${n} = any; declare const ${n}: any;`).join(' ');
    // Line 1 holds the prelude, so error lines map to the example's lines + 1.
    writeFileSync(example.file, `${prelude} export {};\n${example.code}\n`);
  };
  for (const example of examples) write(example, []);
  const first = compile(
    examples.map((e) => e.file),
    options,
  );
  const free = new Map<string, Set<string>>();
  for (const d of first) {
    if (!missingName.has(d.code)) continue;
    const match = /'([^']+)'/.exec(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    if (!match || !d.file) continue;
    const names = free.get(d.file.fileName) ?? new Set<string>();
    names.add(match[1] as string);
    free.set(d.file.fileName, names);
  }
  for (const example of examples) write(example, [...(free.get(example.file) ?? [])]);
  const second = compile(
    examples.map((e) => e.file),
    options,
  );
  total += examples.length;
  for (const d of second) {
    const example = examples.find((e) => e.file === d.file?.fileName);
    if (!example || !d.file || d.start === undefined) continue;
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    failures++;
    console.error(
      `${relative(root, example.source)}:${example.line + line} (example): ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
    );
  }
  rmSync(out, { recursive: true, force: true });
}
console.log(`${total} JSDoc examples checked, ${failures} error(s)`);
process.exit(failures > 0 ? 1 : 0);
