import type { Row } from './lock-port.ts';

/**
 * Reads a boolean-ish column whatever a driver's column transform did to its name (postgres.js
 * `transform: postgres.camel` or `toPascal`): pglock's own columns are single lower-case words.
 */
export function truthy(row: Row, column: string): boolean {
  return cell(row, column) === true;
}

/** A column of one of pglock's own statements, found also under a transformed name. */
export function cell(row: Row, column: string): unknown {
  if (column in row) return row[column];
  const wanted = column.replaceAll('_', '').toLowerCase();
  for (const name of Object.keys(row)) {
    if (name.replaceAll('_', '').toLowerCase() === wanted) return row[name];
  }
  return undefined;
}
