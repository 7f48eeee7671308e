/** Messages from the hot-key parent to a worker. */
export type ToWorker =
  | { readonly type: 'open'; readonly design: number; readonly url: string; readonly worker: number }
  | {
      readonly type: 'go';
      readonly startAt: number;
      readonly until: number;
      readonly key: string;
      readonly row: number;
    }
  | { readonly type: 'close' }
  | { readonly type: 'exit' };

/** Messages from a worker: `cycles` are `[arrival, acquired, released]` in µs on the shared clock. */
export type ToParent =
  | { readonly type: 'started' | 'ready' | 'closed' }
  | {
      readonly type: 'done';
      readonly cycles: readonly (readonly [number, number, number])[];
      readonly errors: number;
      readonly firstError: string | undefined;
    }
  | { readonly type: 'failed'; readonly error: string };
