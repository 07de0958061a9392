import { describe, expect, it } from 'vitest';
import { sharedProbe } from '../../src/admin/conversation-change-probe.js';

describe("the dashboard's shared change probe", () => {
  it('asks the store once for every open page within its time to live, and again after it', async () => {
    let now = 0;
    let calls = 0;
    let release: (value: string) => void = () => undefined;
    const probe = sharedProbe(
      () => new Promise<string>((resolve) => ((calls += 1), (release = resolve))),
      500,
      () => now,
    );

    const first = [probe(), probe(), probe()];
    release('a');
    expect(await Promise.all(first)).toEqual(['a', 'a', 'a']);
    now = 499;
    expect(await probe()).toBe('a');
    expect(calls).toBe(1);

    now = 500;
    const later = probe();
    release('b');
    expect(await later).toBe('b');
    expect(calls).toBe(2);
  });
});
