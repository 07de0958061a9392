import { describe, expect, it } from 'vitest';
import { Inbox } from '../../src/runtime/inbox.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Inbox', () => {
  it('runs at most one turn per conversation and batches what arrives meanwhile', async () => {
    const batches: string[][] = [];
    let running = 0;
    let maxRunning = 0;
    const inbox = new Inbox<string, number>({
      runBatch: async (_key, items) => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        batches.push([...items]);
        await sleep(30);
        running--;
        return batches.length;
      },
    });
    const first = inbox.submit('a', 'one');
    await sleep(5);
    const rest = [inbox.submit('a', 'two'), inbox.submit('a', 'three')];
    expect(await first).toBe(1);
    expect(await Promise.all(rest)).toEqual([2, 2]);
    expect(batches).toEqual([['one'], ['two', 'three']]);
    expect(maxRunning).toBe(1);
  });

  it('runs different conversations in parallel', async () => {
    let running = 0;
    let maxRunning = 0;
    const inbox = new Inbox<string, void>({
      runBatch: async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await sleep(20);
        running--;
      },
    });
    await Promise.all([inbox.submit('a', 'x'), inbox.submit('b', 'y'), inbox.submit('c', 'z')]);
    expect(maxRunning).toBe(3);
  });

  it('waits for a quiet window before answering a burst together', async () => {
    const batches: string[][] = [];
    const inbox = new Inbox<string, void>({ debounceMs: 40, runBatch: async (_key, items) => void batches.push([...items]) });
    const pending = [inbox.submit('a', '1')];
    await sleep(20);
    pending.push(inbox.submit('a', '2'));
    await sleep(20);
    pending.push(inbox.submit('a', '3'));
    await Promise.all(pending);
    expect(batches).toEqual([['1', '2', '3']]);
  });

  it('rejects every waiter of a failed batch and keeps serving the conversation', async () => {
    let calls = 0;
    const inbox = new Inbox<string, string>({
      runBatch: async (_key, items) => {
        calls++;
        if (calls === 1) throw new Error('model down');
        return items.join('+');
      },
    });
    await expect(inbox.submit('a', 'x')).rejects.toThrow('model down');
    expect(await inbox.submit('a', 'y')).toBe('y');
    await inbox.drain();
    expect(inbox.activeConversations).toBe(0);
  });
});
