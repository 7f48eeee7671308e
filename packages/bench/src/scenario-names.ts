/** The scenarios of one Node.js line's run, as logged and as keys of its load windows. */
export const SCENARIO = {
  micro: '0. pglock’s own JavaScript per call',
  overhead: '1. overhead per locked transaction',
  hotKey: '2–3. one hot key',
  memory: '4. memory',
  starvation: '5. waiters and the pool',
  runOnce: '6. statements per runOnce',
} as const;
