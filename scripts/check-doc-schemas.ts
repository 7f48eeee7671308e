// Checks that the `pglock_jobs` table docs/scheduling.md gives for each ORM works with that ORM's own
// tools and is the table `pglock schema` creates, column by column (name, type, precision,
// nullability, default) and primary key:
// - Drizzle: `drizzle-kit generate` on the documented table, with drizzle-kit 0.31 and drizzle-orm 0.45,
//   and with drizzle-kit and drizzle-orm 1.0.0-rc.5 (from npm into throwaway folders under $TMPDIR,
//   kept for the next run); its migration SQL is run.
// - Prisma: `prisma validate` (the workspace's Prisma) on the documented model, then the model's
//   CREATE TABLE as Prisma renders it for PostgreSQL (String → TEXT, BigInt → BIGINT,
//   `@db.Timestamptz` → TIMESTAMPTZ, a bare DateTime → TIMESTAMP(3), `@id` → the primary key), from a
//   parse of the model. Not `prisma migrate diff --from-empty --to-schema … --script`: that needs
//   Prisma's schema engine, a binary the CLI downloads from Prisma's own server (not npm), which this
//   machine and CI cannot reach; with an empty stand-in for it (PRISMA_SCHEMA_ENGINE_BINARY) it prints
//   nothing and exits 0, so it could not tell a good model from a bad one.
// - Kysely: the documented migration's `up`, run.
// Each runs in a schema of its own in DATABASE_URL's database, and so does `pglock schema`'s DDL
// (from the CLI's source entry): what that creates is the expected table, so a column added there is
// expected of every ORM's table. The schemas are dropped at the end.
// Usage: DATABASE_URL=… tsx scripts/check-doc-schemas.ts [--report-dir DIR] (vitest-style JSON reports,
// one per ORM: schemas-<orm>.json). Exits 1 on any difference.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// drizzle-kit with the drizzle-orm it pairs with: 0.31 for 0.44/0.45, and Drizzle 1.0's candidate.
const drizzleKits = [
  { kit: '0.31.11', orm: '0.45.4' },
  { kit: '1.0.0-rc.5', orm: '1.0.0-rc.5' },
];
const { values: args } = parseArgs({ options: { 'report-dir': { type: 'string' } } });
const url = process.env.DATABASE_URL;
if (!url) {
  console.error(
    'check-doc-schemas: set DATABASE_URL (the tables are created in schemas of their own, then dropped)',
  );
  process.exit(64);
}

const doc = readFileSync(join(root, 'docs', 'scheduling.md'), 'utf8');
/** The body of the first ```lang block of docs/scheduling.md whose text matches `marker`. */
function block(lang: string, marker: RegExp): string {
  for (const [, body] of doc.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))) {
    if (marker.test(body as string)) return body as string;
  }
  throw new Error(`docs/scheduling.md has no \`\`\`${lang} block matching ${marker}`);
}

interface Column {
  readonly type: string;
  readonly nullable: boolean;
  readonly default: string | null;
}
interface Table {
  readonly columns: ReadonlyMap<string, Column>;
  readonly primaryKey: readonly string[];
}

const client = new pg.Client({ connectionString: url });
await client.connect();
const schemas: string[] = [];
/** Runs `create` with a fresh schema first on the search_path, and reads back what it made of pglock_jobs. */
async function tableFrom(label: string, create: (schema: string) => Promise<void>): Promise<Table> {
  const schema = `pglock_doc_${label}_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
  schemas.push(schema);
  await client.query(`CREATE SCHEMA ${schema}`);
  await client.query(`SET search_path TO ${schema}`);
  try {
    await create(schema);
  } finally {
    await client.query('RESET search_path');
  }
  const { rows } = await client.query<{
    column_name: string;
    type: string;
    is_nullable: string;
    column_default: string | null;
  }>(
    `SELECT a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS type,
            CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END AS is_nullable,
            pg_get_expr(d.adbin, d.adrelid) AS column_default
       FROM pg_attribute a
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [`${schema}.pglock_jobs`],
  );
  const key = await client.query<{ attname: string }>(
    `SELECT a.attname FROM pg_index i
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
      WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY a.attname`,
    [`${schema}.pglock_jobs`],
  );
  return {
    columns: new Map(
      rows.map((r) => [
        r.column_name,
        { type: r.type, nullable: r.is_nullable === 'YES', default: r.column_default },
      ]),
    ),
    primaryKey: key.rows.map((r) => r.attname),
  };
}

/** What differs between the expected table and `actual`, one line each. */
function differences(expected: Table, actual: Table): string[] {
  const found: string[] = [];
  for (const [name, want] of expected.columns) {
    const got = actual.columns.get(name);
    if (!got) {
      found.push(`column ${name} (${want.type}) is missing`);
      continue;
    }
    if (got.type !== want.type) found.push(`column ${name} is ${got.type}, pglock's is ${want.type}`);
    if (got.nullable !== want.nullable)
      found.push(`column ${name} is ${got.nullable ? 'nullable' : 'NOT NULL'}, pglock's is not`);
    if (got.default !== want.default)
      found.push(
        `column ${name} defaults to ${got.default ?? 'nothing'}, pglock's to ${want.default ?? 'nothing'}`,
      );
  }
  for (const name of actual.columns.keys()) {
    if (!expected.columns.has(name)) found.push(`column ${name} is not in pglock's table`);
  }
  if (actual.primaryKey.join(',') !== expected.primaryKey.join(',')) {
    found.push(
      `primary key (${actual.primaryKey.join(', ')}), pglock's is (${expected.primaryKey.join(', ')})`,
    );
  }
  return found;
}

/** npm installs `specs` into `dir` unless each is there at its version. */
async function installed(dir: string, specs: readonly string[]): Promise<void> {
  const present = specs.every((spec) => {
    const at = spec.lastIndexOf('@');
    const file = join(dir, 'node_modules', spec.slice(0, at), 'package.json');
    return existsSync(file) && JSON.parse(readFileSync(file, 'utf8')).version === spec.slice(at + 1);
  });
  if (present) return;
  mkdirSync(dir, { recursive: true });
  await run(
    'npm',
    [
      'install',
      '--prefix',
      dir,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...specs,
    ],
    { env: { ...process.env, npm_config_update_notifier: 'false' } },
  );
}

/** The Prisma model's CREATE TABLE as Prisma renders it for PostgreSQL, from a parse of the model. */
function prismaCreateTable(model: string): string {
  const table = /@@map\("([^"]+)"\)/.exec(model)?.[1] ?? /model (\w+)/.exec(model)?.[1];
  const scalars: Record<string, string> = {
    String: 'TEXT',
    Int: 'INTEGER',
    BigInt: 'BIGINT',
    Boolean: 'BOOLEAN',
    DateTime: 'TIMESTAMP(3)',
    Float: 'DOUBLE PRECISION',
    Json: 'JSONB',
    Bytes: 'BYTEA',
  };
  const natives: Record<string, (arg: string | undefined) => string> = {
    Timestamptz: (p) => (p === undefined ? 'TIMESTAMPTZ' : `TIMESTAMPTZ(${p})`),
    Timestamp: (p) => (p === undefined ? 'TIMESTAMP' : `TIMESTAMP(${p})`),
    Text: () => 'TEXT',
    BigInt: () => 'BIGINT',
    Integer: () => 'INTEGER',
  };
  const columns: string[] = [];
  const key: string[] = [];
  for (const line of model.split('\n')) {
    const field = /^\s+(\w+)\s+(\w+)(\?)?((?:\s+@.*)?)$/.exec(line.replace(/\/\/.*$/, ''));
    if (!field || line.trim().startsWith('@@')) continue;
    const [, name, scalar, optional, attributes = ''] = field as unknown as [
      string,
      string,
      string,
      string?,
      string?,
    ];
    const column = /@map\("([^"]+)"\)/.exec(attributes)?.[1] ?? name;
    const native = /@db\.(\w+)(?:\((\d+)\))?/.exec(attributes);
    const render = native ? natives[native[1] as string] : undefined;
    if (native && !render)
      throw new Error(`the check does not know @db.${native[1]}: add how Prisma renders it`);
    const type = render ? render(native?.[2]) : scalars[scalar];
    if (!type)
      throw new Error(`the check does not know the Prisma type ${scalar}: add how Prisma renders it`);
    const fallback = /@default\(([^()]*)\)/.exec(attributes)?.[1];
    columns.push(
      `"${column}" ${type}${optional ? '' : ' NOT NULL'}${fallback === undefined ? '' : ` DEFAULT ${fallback}`}`,
    );
    if (/@id\b/.test(attributes)) key.push(`"${column}"`);
  }
  return `CREATE TABLE "${table}" (\n  ${[...columns, `CONSTRAINT "${table}_pkey" PRIMARY KEY (${key.join(', ')})`].join(',\n  ')}\n);`;
}

// The slice of Kysely this script calls (loaded from packages/kysely, as the repository root has none).
interface KyselyLike {
  withSchema(schema: string): KyselyLike;
  destroy(): Promise<void>;
}
interface KyselyModule {
  Kysely: new (config: { dialect: unknown }) => KyselyLike;
  PostgresDialect: new (config: { pool: pg.Pool }) => unknown;
}

const reports = args['report-dir'];
let failed = 0;
function report(name: string, problems: readonly string[]): void {
  if (problems.length === 0) console.log(`ok   ${name}`);
  else console.error(`FAIL ${name}\n${problems.map((p) => `  ${p}`).join('\n')}`);
  if (problems.length > 0) failed++;
  if (reports !== undefined) {
    mkdirSync(reports, { recursive: true });
    writeFileSync(
      join(reports, `schemas-${name.replace(/[^\w.-]+/g, '-')}.json`),
      JSON.stringify({
        numPassedTests: problems.length ? 0 : 1,
        numFailedTests: problems.length ? 1 : 0,
        numPendingTests: 0,
      }),
    );
  }
}
/** Runs one ORM's check; a thrown error (a tool that fails) is its failure, with the tool's output. */
async function check(name: string, body: () => Promise<string[]>): Promise<void> {
  try {
    report(name, await body());
  } catch (error) {
    const { message, stdout, stderr } = error as { message: string; stdout?: string; stderr?: string };
    report(name, [[message, stdout, stderr].filter(Boolean).join('\n').trim()]);
  }
}

const work = join(tmpdir(), 'pglock-doc-schemas');
try {
  const cli = await run(
    process.execPath,
    [
      '--conditions=@pglock/source',
      '--import',
      'tsx',
      join(root, 'packages', 'cli', 'src', 'cli.ts'),
      'schema',
    ],
    { cwd: root },
  );
  const expected = await tableFrom('pglock', async () => {
    await client.query(cli.stdout);
  });
  console.log(`pglock schema: pglock_jobs (${[...expected.columns.keys()].join(', ')})`);

  for (const { kit: drizzleKit, orm: drizzleOrm } of drizzleKits) {
    await check(`drizzle-kit-${drizzleKit}`, async () => {
      const dir = join(work, `drizzle-kit-${drizzleKit}`);
      await installed(dir, [`drizzle-kit@${drizzleKit}`, `drizzle-orm@${drizzleOrm}`]);
      rmSync(join(dir, 'out'), { recursive: true, force: true });
      writeFileSync(join(dir, 'schema.ts'), block('ts', /pgTable\('pglock_jobs'/));
      writeFileSync(
        join(dir, 'drizzle.config.mjs'),
        "export default { dialect: 'postgresql', schema: './schema.ts', out: './out' };\n",
      );
      // drizzle-kit 0.31 exits 0 when it crashes (a BigInt default): its output says what happened.
      const kit = await run(
        process.execPath,
        [join(dir, 'node_modules', 'drizzle-kit', 'bin.cjs'), 'generate', '--config', 'drizzle.config.mjs'],
        { cwd: dir },
      );
      const out = join(dir, 'out');
      const sql = (existsSync(out) ? readdirSync(out, { recursive: true, encoding: 'utf8' }) : [])
        .filter((file) => file.endsWith('.sql'))
        .map((file) => readFileSync(join(out, file), 'utf8'))
        .join('\n');
      if (sql.trim() === '') {
        const said = `${kit.stdout}\n${kit.stderr}`
          .split('\n')
          .filter((line) => line.trim() !== '' && !/^\s+at /.test(line));
        return [`drizzle-kit generate wrote no SQL:\n    ${said.slice(-6).join('\n    ')}`];
      }
      return differences(
        expected,
        await tableFrom('drizzle', async () => {
          await client.query(sql);
        }),
      );
    });
  }

  await check('prisma', async () => {
    const model = block('prisma', /model \w+ \{[\s\S]*@@map\("pglock_jobs"\)/);
    const dir = join(work, 'prisma');
    mkdirSync(dir, { recursive: true });
    const schema = join(dir, 'schema.prisma');
    writeFileSync(schema, `datasource db {\n  provider = "postgresql"\n}\n\n${model}`);
    // validate needs no schema engine, but the CLI downloads one when it is missing: an empty stand-in.
    const engine = join(dir, 'no-schema-engine');
    writeFileSync(engine, '');
    chmodSync(engine, 0o755);
    const prisma = createRequire(join(root, 'packages', 'prisma', 'package.json')).resolve(
      'prisma/build/index.js',
    );
    await run(process.execPath, [prisma, 'validate', '--schema', schema], {
      env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: engine, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    });
    const ddl = prismaCreateTable(model);
    return differences(
      expected,
      await tableFrom('prisma', async () => {
        await client.query(ddl);
      }),
    );
  });

  await check('kysely', async () => {
    const dir = join(root, '.pglock-tmp', 'doc-schemas');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `kysely-migration-${process.pid}.ts`);
    writeFileSync(file, block('ts', /createTable\('pglock_jobs'\)/));
    const kyselyFrom = createRequire(join(root, 'packages', 'kysely', 'package.json'));
    const { Kysely, PostgresDialect } = (await import(
      pathToFileURL(kyselyFrom.resolve('kysely')).href
    )) as KyselyModule;
    const migration = (await import(pathToFileURL(file).href)) as { up(db: KyselyLike): Promise<void> };
    rmSync(file);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const db = new Kysely({ dialect: new PostgresDialect({ pool }) });
    try {
      return differences(
        expected,
        await tableFrom('kysely', (schema) => migration.up(db.withSchema(schema))),
      );
    } finally {
      await db.destroy();
    }
  });
} finally {
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await client.end();
}
process.exit(failed > 0 ? 1 : 0);
