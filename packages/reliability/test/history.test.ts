import { describe, expect, it } from 'vitest';
import { checkHistory, type SectionRow } from '../src/history.ts';

let id = 0;
const row = (
  key: string,
  mode: SectionRow['mode'],
  entered: number,
  exited: number,
  seen: number,
  worker = 'w',
): SectionRow => ({ id: ++id, worker, key, mode, entered: BigInt(entered), exited: BigInt(exited), seen });

// A history the checker must accept: back-to-back writers (touching endpoints), overlapping
// readers between them, and an independent key.
const clean = [
  row('a', 'exclusive', 0, 10, 0),
  row('a', 'exclusive', 10, 20, 1),
  row('a', 'shared', 21, 30, 2),
  row('a', 'shared', 22, 28, 2),
  row('a', 'exclusive', 31, 40, 2),
  row('b', 'exclusive', 5, 15, 0),
];

describe('checkHistory', () => {
  it('accepts a valid history and counts it', () => {
    const report = checkHistory({
      sections: clean,
      counters: [
        { key: 'a', value: 3 },
        { key: 'b', value: 1 },
      ],
      heldLocks: 0,
    });
    expect(report).toEqual({ sections: 6, exclusive: 4, shared: 2, session: 0, violations: [] });
  });

  it('finds two overlapping exclusive sections on a key', () => {
    const sections = [row('a', 'exclusive', 0, 10, 0), row('a', 'exclusive', 9, 20, 1)];
    const report = checkHistory({ sections, counters: [{ key: 'a', value: 2 }], heldLocks: 0 });
    expect(report.violations.map((v) => v.kind)).toEqual(['exclusive-overlap']);
  });

  it('finds an exclusive section inside a long earlier one (not only neighbours)', () => {
    const sections = [
      row('a', 'exclusive', 0, 100, 0),
      row('a', 'shared', 10, 20, 1),
      row('a', 'exclusive', 50, 60, 1),
    ];
    const kinds = checkHistory({ sections, counters: [{ key: 'a', value: 2 }], heldLocks: 0 }).violations.map(
      (v) => v.kind,
    );
    expect(kinds).toContain('exclusive-overlap');
    expect(kinds).toContain('shared-overlap');
  });

  it('finds a shared section overlapping an exclusive one, in either order', () => {
    for (const sections of [
      [row('a', 'shared', 0, 10, 0), row('a', 'exclusive', 5, 15, 0)],
      [row('a', 'exclusive', 0, 10, 0), row('a', 'shared', 5, 15, 1)],
    ]) {
      const report = checkHistory({ sections, counters: [{ key: 'a', value: 1 }], heldLocks: 0 });
      expect(report.violations.map((v) => v.kind)).toEqual(['shared-overlap']);
    }
  });

  it('does not mix keys', () => {
    const sections = [row('a', 'exclusive', 0, 10, 0), row('b', 'exclusive', 0, 10, 0)];
    const counters = [
      { key: 'a', value: 1 },
      { key: 'b', value: 1 },
    ];
    expect(checkHistory({ sections, counters, heldLocks: 0 }).violations).toEqual([]);
  });

  it('finds a lost increment: the counter is behind the committed writers', () => {
    const report = checkHistory({
      sections: clean,
      counters: [
        { key: 'a', value: 2 },
        { key: 'b', value: 1 },
      ],
      heldLocks: 0,
    });
    expect(report.violations).toMatchObject([{ kind: 'lost-increment', key: 'a' }]);
  });

  it('finds a lost increment when two writers read the same value without overlapping in the log', () => {
    const sections = [row('a', 'exclusive', 0, 10, 0), row('a', 'exclusive', 11, 20, 0)];
    const report = checkHistory({ sections, counters: [{ key: 'a', value: 2 }], heldLocks: 0 });
    expect(report.violations).toMatchObject([
      { kind: 'lost-increment', detail: expect.stringContaining('read 0') },
    ]);
  });

  it('finds a counter written by no committed section', () => {
    const report = checkHistory({ sections: [], counters: [{ key: 'c', value: 4 }], heldLocks: 0 });
    expect(report.violations).toMatchObject([{ kind: 'lost-increment', key: 'c' }]);
  });

  it('finds advisory locks left held', () => {
    const report = checkHistory({ sections: [], counters: [], heldLocks: 2 });
    expect(report.violations).toMatchObject([{ kind: 'lock-left-held' }]);
  });

  it('counts session-lock sections, and finds them overlapping transaction-scoped ones (the two lock spaces are one)', () => {
    const session = { ...row('a', 'exclusive', 0, 10, 0), scope: 'session' as const };
    const sections = [session, row('a', 'exclusive', 5, 15, 0)];
    const report = checkHistory({ sections, counters: [{ key: 'a', value: 1 }], heldLocks: 0 });
    expect(report.session).toBe(1);
    expect(report.violations.map((v) => v.kind)).toEqual(['exclusive-overlap']);
  });

  it('a session-lock section writes nothing and must read every earlier writer', () => {
    const sections = [
      row('a', 'exclusive', 0, 10, 0),
      { ...row('a', 'exclusive', 11, 20, 1), scope: 'session' as const },
      row('a', 'exclusive', 21, 30, 1),
      { ...row('a', 'exclusive', 31, 40, 1), scope: 'session' as const },
    ];
    const report = checkHistory({ sections, counters: [{ key: 'a', value: 2 }], heldLocks: 0 });
    expect(report.violations).toMatchObject([
      { kind: 'lost-increment', detail: expect.stringMatching(/session.*read 1, but 2/) },
    ]);
  });

  it('finds a session lock granted through a transaction-mode pooler, and one left behind there', () => {
    const report = checkHistory({
      sections: [],
      counters: [],
      heldLocks: 0,
      poolerSessionLocks: 1,
      poolerLeaks: ['pooler backend 7 sat idle holding chaos:a'],
    });
    expect(report.violations.map((v) => v.kind)).toEqual([
      'session-lock-through-pooler',
      'lock-leaked-through-pooler',
    ]);
  });
});
