import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Inbox } from '../../src/runtime/inbox.js';

/** A promise with its resolve, to hold a batch open until the test lets it go. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('Inbox', () => {
  it('runs at most one turn per conversation and batches what arrives meanwhile into exactly one next turn', async () => {
    const batches: string[][] = [];
    const firstTurn = gate();
    let running = 0;
    let maxRunning = 0;
    const inbox = new Inbox<string>({
      onError: () => {},
      runBatch: async (_key, items) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        batches.push([...items]);
        if (batches.length === 1) await firstTurn.opened;
        running--;
      },
    });
    inbox.submit('a', 'one');
    inbox.submit('a', 'two');
    inbox.submit('a', 'three');
    expect(batches).toEqual([['one']]);
    firstTurn.open();
    await inbox.drain();
    expect(batches).toEqual([['one'], ['two', 'three']]);
    expect(maxRunning).toBe(1);
  });

  it('runs different conversations in parallel', async () => {
    const held = gate();
    const started: string[] = [];
    const inbox = new Inbox<string>({
      onError: () => {},
      runBatch: async (key) => {
        started.push(key);
        await held.opened;
      },
    });
    inbox.submit('a', 'x');
    inbox.submit('b', 'y');
    inbox.submit('c', 'z');
    // All three started while none has finished.
    expect(started).toEqual(['a', 'b', 'c']);
    held.open();
    await inbox.drain();
  });

  // The inbox's clock (setTimeout and performance.now) is faked: the windows are checked to the millisecond, however
  // busy the machine.
  describe('on a fake clock', () => {
    beforeEach(() => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('waits for a quiet window after the last message before answering a burst together', async () => {
      const batches: string[][] = [];
      const inbox = new Inbox<string>({ onError: () => {}, runBatch: async (_key, items) => void batches.push([...items]) });
      const window = { quietWindowMs: 200, maxWaitMs: 5_000 };
      inbox.submit('a', '1', window);
      await vi.advanceTimersByTimeAsync(150);
      inbox.submit('a', '2', window);
      await vi.advanceTimersByTimeAsync(150);
      inbox.submit('a', '3', window);
      // 300 ms after the first message, but only 199 after the last: still waiting.
      await vi.advanceTimersByTimeAsync(199);
      expect(batches).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([['1', '2', '3']]);
      await inbox.drain();
    });

    it('starts each conversation when its own quiet window ends, whatever order they were written in', async () => {
      const started: string[] = [];
      const inbox = new Inbox<string>({ onError: () => {}, runBatch: async (key) => void started.push(key) });
      inbox.submit('slow', 'x', { quietWindowMs: 500, maxWaitMs: 5_000 });
      inbox.submit('fast', 'x', { quietWindowMs: 100, maxWaitMs: 5_000 });
      inbox.submit('later', 'x', { quietWindowMs: 300, maxWaitMs: 5_000 });
      await vi.advanceTimersByTimeAsync(50);
      // A new message puts `fast` back by a whole window: 150 ms from the start.
      inbox.submit('fast', 'y', { quietWindowMs: 100, maxWaitMs: 5_000 });
      await vi.advanceTimersByTimeAsync(99);
      expect(started).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(started).toEqual(['fast']);
      await vi.advanceTimersByTimeAsync(150);
      expect(started).toEqual(['fast', 'later']);
      await vi.advanceTimersByTimeAsync(199);
      expect(started).toEqual(['fast', 'later']);
      await vi.advanceTimersByTimeAsync(1);
      expect(started).toEqual(['fast', 'later', 'slow']);
      await inbox.drain();
    });

    it('starts conversations whose windows end at the same moment in the order they were written in', async () => {
      const started: string[] = [];
      const inbox = new Inbox<string>({ onError: () => {}, runBatch: async (key) => void started.push(key) });
      const keys = Array.from({ length: 50 }, (_, i) => `c${i}`);
      for (const key of keys) inbox.submit(key, 'x', { quietWindowMs: 200, maxWaitMs: 200 });
      await vi.advanceTimersByTimeAsync(200);
      expect(started).toEqual(keys);
      await inbox.drain();
    });

    it('stops waiting for quiet after the maximum wait, however often messages keep coming', async () => {
      const started: number[] = [];
      const inbox = new Inbox<number>({ onError: () => {}, runBatch: async (_key, items) => void started.push(items.length) });
      const window = { quietWindowMs: 30, maxWaitMs: 80 };
      // A message every 10 ms never leaves 30 ms of quiet; the turn starts anyway 80 ms after the first one.
      let elapsed = 0;
      for (let sent = 0; started.length === 0 && elapsed <= 200; sent++) {
        inbox.submit('a', sent, window);
        await vi.advanceTimersByTimeAsync(10);
        elapsed += 10;
      }
      expect(elapsed).toBe(80);
      // The messages of the first 80 ms (0, 10, …, 70) made the batch.
      expect(started).toEqual([8]);
      await inbox.drain();
    });

    it('counts the quiet window of messages taken over after a crash from their arrival, not from the takeover', async () => {
      const batches: string[][] = [];
      const inbox = new Inbox<string>({ onError: () => {}, runBatch: async (_key, items) => void batches.push([...items]) });
      const window = { quietWindowMs: 2_500, maxWaitMs: 10_000 };
      // Arrived 4 and 3 s ago: their window passed while their process lay dead, so the turn starts at once.
      inbox.submitAll('old', ['a', 'b'], window, { newestMsAgo: 3_000, oldestMsAgo: 4_000 });
      await vi.advanceTimersByTimeAsync(0);
      expect(batches).toEqual([['a', 'b']]);
      // Arrived 2 s ago: only the rest of its window, 500 ms, is left.
      inbox.submitAll('recent', ['c'], window, { newestMsAgo: 2_000, oldestMsAgo: 2_000 });
      await vi.advanceTimersByTimeAsync(499);
      expect(batches).toEqual([['a', 'b']]);
      await vi.advanceTimersByTimeAsync(1);
      expect(batches).toEqual([['a', 'b'], ['c']]);
      // A message that arrived here just now keeps its own window, whatever older ones join it.
      inbox.submit('mixed', 'new', window);
      inbox.submitAll('mixed', ['older'], window, { newestMsAgo: 5_000, oldestMsAgo: 5_000 });
      await vi.advanceTimersByTimeAsync(2_499);
      expect(batches).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(1);
      expect(batches.at(-1)).toEqual(['new', 'older']);
      await inbox.drain();
    });
  });

  it('starts exactly one more turn for messages that came during a turn, after their own quiet window', async () => {
    const batches: string[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const inbox = new Inbox<string>({
      onError: () => {},
      runBatch: async (_key, items) => {
        batches.push([...items]);
        if (batches.length === 1) await held;
      },
    });
    const window = { quietWindowMs: 30, maxWaitMs: 1_000 };
    inbox.submit('a', 'first', window);
    await expect.poll(() => batches.length).toBe(1);
    inbox.submit('a', 'during-1', window);
    inbox.submit('a', 'during-2', window);
    release();
    await inbox.drain();
    expect(batches).toEqual([['first'], ['during-1', 'during-2']]);
  });

  it('reports a failed batch and keeps serving the conversation', async () => {
    const errors: unknown[] = [];
    const batches: string[][] = [];
    const inbox = new Inbox<string>({
      onError: (error) => errors.push(error),
      runBatch: async (_key, items) => {
        batches.push([...items]);
        if (batches.length === 1) throw new Error('model down');
      },
    });
    inbox.submit('a', 'x');
    await inbox.drain();
    inbox.submit('a', 'y');
    await inbox.drain();
    expect(errors.map((error) => (error as Error).message)).toEqual(['model down']);
    expect(batches).toEqual([['x'], ['y']]);
  });

  it('runs at most maxRunning turns at once across conversations, the others in arrival order as slots free up', async () => {
    const started: string[] = [];
    let running = 0;
    let maxSeen = 0;
    const releases: (() => void)[] = [];
    const inbox = new Inbox<string>({
      onError: () => {},
      maxRunning: 2,
      runBatch: async (key) => {
        started.push(key);
        running++;
        maxSeen = Math.max(maxSeen, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
      },
    });
    for (const key of ['a', 'b', 'c', 'd']) inbox.submit(key, key);
    expect(started).toEqual(['a', 'b']);
    releases.shift()!();
    await expect.poll(() => started.length).toBe(3);
    expect(started).toEqual(['a', 'b', 'c']);
    while (releases.length > 0 || started.length < 4) {
      releases.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await inbox.drain();
    expect(started).toEqual(['a', 'b', 'c', 'd']);
    expect(maxSeen).toBe(2);
  });
});

describe('Inbox timing and batching (fake clock)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function recording<Item>(options: { sameBatch?: (first: Item, item: Item) => boolean } = {}) {
    const batches: Item[][] = [];
    const inbox = new Inbox<Item>({ onError: () => {}, runBatch: async (_key, items) => void batches.push([...items]), ...options });
    return { inbox, batches };
  }

  it('starts a turn exactly one quiet window after the last message, not a moment before', async () => {
    const { inbox, batches } = recording<string>();
    const window = { quietWindowMs: 1_000, maxWaitMs: 10_000 };
    inbox.submit('a', '1', window);
    await vi.advanceTimersByTimeAsync(600);
    inbox.submit('a', '2', window);
    await vi.advanceTimersByTimeAsync(999);
    expect(batches).toEqual([]);
    expect(inbox.waiting('a')).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([['1', '2']]);
    expect(inbox.waiting('a')).toBe(0);
  });

  it('starts no later than the maximum wait after the first message, and never before the quiet window', async () => {
    const { inbox, batches } = recording<number>();
    const window = { quietWindowMs: 300, maxWaitMs: 1_000 };
    for (let sent = 0; sent < 5; sent++) {
      inbox.submit('a', sent, window);
      await vi.advanceTimersByTimeAsync(200);
    }
    // 1,000 ms after the first message, though the last one came only 200 ms ago.
    expect(batches).toEqual([[0, 1, 2, 3, 4]]);

    // A maximum wait shorter than the quiet window does not cut the window short.
    const short = recording<string>();
    short.inbox.submit('b', 'x', { quietWindowMs: 500, maxWaitMs: 100 });
    await vi.advanceTimersByTimeAsync(499);
    expect(short.batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(short.batches).toEqual([['x']]);
  });

  it('never mixes senders in one batch: each run of one sender is its own turn, in arrival order', async () => {
    const { inbox, batches } = recording<{ from: string; text: string }>({ sameBatch: (first, item) => first.from === item.from });
    const window = { quietWindowMs: 100, maxWaitMs: 1_000 };
    const texts = () => batches.map((batch) => batch.map((item) => item.text));
    inbox.submit('group', { from: 'ann', text: 'hi' }, window);
    inbox.submit('group', { from: 'ann', text: 'book me' }, window);
    inbox.submit('group', { from: 'bob', text: 'me too' }, window);
    inbox.submit('group', { from: 'ann', text: 'thanks' }, window);
    await vi.advanceTimersByTimeAsync(99);
    expect(batches).toEqual([]);
    expect(inbox.waiting('group')).toBe(4);
    // Each later turn starts at once: the conversation has been quiet for a window already.
    await vi.advanceTimersByTimeAsync(1);
    await vi.runAllTimersAsync();
    await inbox.drain();
    expect(texts()).toEqual([['hi', 'book me'], ['me too'], ['thanks']]);
  });

  it('drain resolves at once when nothing waits, and only after the last waiting turn otherwise', async () => {
    const { inbox, batches } = recording<string>();
    await inbox.drain();
    inbox.submit('a', 'x', { quietWindowMs: 1_000, maxWaitMs: 1_000 });
    let drained = false;
    const draining = inbox.drain().then(() => (drained = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(drained).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await draining;
    expect(batches).toEqual([['x']]);
    expect(inbox.waiting('a')).toBe(0);
  });

  it('measures the maximum wait of messages that came during a turn from the first of them', async () => {
    const started: number[] = [];
    let release!: () => void;
    const inbox = new Inbox<string>({
      onError: () => {},
      runBatch: async () => {
        started.push(performance.now());
        if (started.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
    });
    const begin = performance.now();
    const window = { quietWindowMs: 100, maxWaitMs: 300 };
    inbox.submit('a', 'first', window);
    await vi.advanceTimersByTimeAsync(100);
    expect(started).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(800);
    inbox.submit('a', 'during', window); // at 900 ms, while the first turn runs
    await vi.advanceTimersByTimeAsync(100);
    release();
    // Messages keep coming every 50 ms: the second turn starts 300 ms after "during" arrived, not at once.
    for (let at = 1_000; at < 1_400 && started.length === 1; at += 50) {
      inbox.submit('a', `more at ${at}`, window);
      await vi.advanceTimersByTimeAsync(50);
    }
    expect(started.map((at) => at - begin)).toEqual([100, 1_200]);
  });

  it("frees a finished turn's slot for later messages", async () => {
    const batches: string[][] = [];
    const inbox = new Inbox<string>({ onError: () => {}, maxRunning: 1, runBatch: async (key, items) => void batches.push([key, ...items]) });
    inbox.submit('a', 'x');
    await vi.advanceTimersByTimeAsync(0);
    inbox.submit('b', 'y');
    await vi.advanceTimersByTimeAsync(0);
    inbox.submit('a', 'z');
    await vi.advanceTimersByTimeAsync(0);
    expect(batches).toEqual([
      ['a', 'x'],
      ['b', 'y'],
      ['a', 'z'],
    ]);
  });

  it('drain waits for every conversation, not only the first to finish', async () => {
    let release!: () => void;
    const inbox = new Inbox<string>({
      onError: () => {},
      runBatch: async (key) => {
        if (key === 'slow') await new Promise<void>((resolve) => (release = resolve));
      },
    });
    inbox.submit('slow', 'x');
    inbox.submit('quick', 'y', { quietWindowMs: 10, maxWaitMs: 10 });
    let drained = false;
    const draining = inbox.drain().then(() => (drained = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(drained).toBe(false);
    release();
    await draining;
    expect(inbox.waiting('slow')).toBe(0);
  });
});
