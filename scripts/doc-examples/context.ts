// The values and types the docs' snippets use without defining them, typed as the docs mean them, so
// that a snippet is checked against real types where a name is used the same way everywhere. Every
// other undefined name in a snippet is declared `any` for it (scripts/check-doc-examples.ts).
import type pg from 'pg';

/** A node-postgres pool: every snippet's `pool`. */
export declare const pool: pg.Pool;

/** The Kysely database of the snippets: the tables they query. */
export interface Database {
  readonly product: { id: number; stock: number };
}
