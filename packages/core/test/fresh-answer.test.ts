import { describe, expect, it } from 'vitest';
import { freshAnswer } from '../src/fresh-answer.ts';

const after = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(resolve, ms, value));

describe('freshAnswer', () => {
  it('a prompt answer is taken at once', async () => {
    let asks = 0;
    expect(await freshAnswer(async () => ++asks, 1_000)).toBe(1);
    expect(asks).toBe(1);
  });

  it('a slow answer is asked once more, and the second is taken even when it is slow too', async () => {
    let asks = 0;
    expect(await freshAnswer(() => after(30, ++asks), 10)).toBe(2);
    expect(asks).toBe(2);
  });

  it('a failed ask rejects as it is', async () => {
    await expect(freshAnswer(() => Promise.reject(new Error('no control connection')))).rejects.toThrow(
      'no control connection',
    );
  });
});
