import { describe, expect, it } from 'vitest';
import {
  checkSchedules,
  type ElectionRow,
  type FencedWriteRow,
  type JobRunRow,
  type TickRow,
} from '../src/schedule-history.ts';

// Hand-made histories (microseconds): each violation the chaos run looks for, and a clean one.
let id = 0;
const run = (
  name: string,
  periodStart: number,
  txStart: number,
  ranAt: number,
  doomed = false,
): JobRunRow => ({
  id: ++id,
  worker: 'w',
  name,
  periodStart: BigInt(periodStart),
  periodEnd: BigInt(periodStart + 300_000),
  doomed,
  txStart: BigInt(txStart),
  ranAt: BigInt(ranAt),
});
const election = (term: number, electedAt: number, held = true): ElectionRow => ({
  id: ++id,
  name: 'l',
  term,
  electedAt: BigInt(electedAt),
  pid: 100 + term,
  held,
});
const tick = (term: number, at: number): TickRow => ({ name: 'l', term, at: BigInt(at) });
const write = (term: number, campaign: string): FencedWriteRow => ({ id: ++id, name: 'l', term, campaign });

const check = (history: Partial<Parameters<typeof checkSchedules>[0]>) =>
  checkSchedules({ jobRuns: [], perOf: () => 300, elections: [], ticks: [], fencedWrites: [], ...history });
const kinds = (history: Partial<Parameters<typeof checkSchedules>[0]>) =>
  check(history).violations.map((violation) => violation.kind);

describe('checkSchedules', () => {
  it('accepts one run per period, rising terms one after another, and fenced writes in term order', () => {
    const report = check({
      // The second run's transaction began in the period before (its claim came after the boundary).
      jobRuns: [run('j', 0, 10, 20), run('j', 300_000, 299_990, 300_020)],
      elections: [election(1, 0), election(2, 1_000)],
      ticks: [tick(1, 500), tick(1, 999), tick(2, 1_500)],
      fencedWrites: [write(1, 'a'), write(1, 'a'), write(2, 'b')],
    });
    expect(report).toEqual({
      jobRuns: 2,
      periods: 2,
      elections: 2,
      verifiedTicks: 3,
      fencedWrites: 3,
      violations: [],
    });
  });

  it('finds a period run twice, a run outside its period, and a thrown run that committed', () => {
    expect(kinds({ jobRuns: [run('j', 0, 10, 20), run('j', 0, 100, 120)] })).toEqual(['period-run-twice']);
    expect(kinds({ jobRuns: [run('j', 0, 300_010, 300_020)] })).toEqual(['run-outside-period']);
    expect(kinds({ jobRuns: [run('j', 0, 10, 20)], perOf: () => 700 })).toEqual(['run-outside-period']);
    expect(kinds({ jobRuns: [run('j', 0, 10, 20, true)] })).toEqual(['thrown-run-committed']);
  });

  it('finds overlapping leaderships, terms out of election order, and a term written without the lock', () => {
    expect(kinds({ elections: [election(1, 0), election(2, 1_000)], ticks: [tick(1, 1_001)] })).toEqual([
      'leader-overlap',
    ]);
    expect(kinds({ elections: [election(2, 0), election(1, 1_000)] })).toEqual(['terms-not-increasing']);
    expect(kinds({ elections: [election(1, 0), election(1, 1_000)] })).toEqual(['terms-not-increasing']);
    expect(kinds({ elections: [election(1, 0, false)] })).toEqual(['election-without-lock']);
    expect(kinds({ elections: [election(1, 0)], ticks: [tick(3, 10)] })).toEqual(['tick-without-election']);
  });

  it('finds a lower term accepted after a higher one, and one term written by two campaigns', () => {
    expect(kinds({ fencedWrites: [write(2, 'a'), write(1, 'b')] })).toEqual(['fenced-term-regressed']);
    expect(kinds({ fencedWrites: [write(1, 'a'), write(1, 'b')] })).toEqual(['term-shared']);
  });
});
