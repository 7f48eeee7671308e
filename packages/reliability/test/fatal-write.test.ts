import { describe, expect, it } from 'vitest';
import { type FatalWrite, handedWhileOpen, ormOwnEnd } from '../src/postgres-js-writes.ts';

// The chaos run's verdicts on a postgres.js write-timer crash (porsager/postgres #1208), from the
// evidence its write watch records: which statements a fatal write carried, and which of them were
// handed to the connection after postgres.js reported it closed.
const claim = 'WITH p AS ( SELECT $1::text::bigint AS key';
const write = (over: Partial<FatalWrite>): FatalWrite => ({
  connection: 2,
  statements: [claim, 'rollback'],
  closedBefore: true,
  closedMsBefore: 25,
  writtenSinceClose: false,
  handedAfterClose: ['rollback'],
  ...over,
});

describe('fatal write verdicts', () => {
  it("handedWhileOpen: pglock's statement handed while open, only the ORM's rollback after the close", () => {
    expect(handedWhileOpen(write({}))).toBe(true);
    expect(handedWhileOpen(write({ handedAfterClose: [] }))).toBe(true);
  });

  it('handedWhileOpen: a statement of pglock handed after the close fails the run, as does missing evidence', () => {
    expect(handedWhileOpen(write({ handedAfterClose: [claim, 'rollback'] }))).toBe(false);
    expect(handedWhileOpen(write({ handedAfterClose: undefined }))).toBe(false);
    expect(handedWhileOpen(write({ closedBefore: false }))).toBe(false);
    expect(handedWhileOpen(write({ writtenSinceClose: true }))).toBe(false);
    expect(handedWhileOpen(write({ statements: [] }))).toBe(false);
    expect(handedWhileOpen(undefined)).toBe(false);
  });

  it("ormOwnEnd: only the ORM's own COMMIT/ROLLBACK", () => {
    expect(ormOwnEnd(write({ statements: ['rollback'] }))).toBe(true);
    expect(ormOwnEnd(write({}))).toBe(false);
  });
});
