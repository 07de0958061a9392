import { afterEach, describe, expect, it, vi } from 'vitest';
import { withAnswerDeadline } from '../../src/models/answer-deadline.js';

/** A `fetch` that answers at once with `body` and hands out the signal each call was given. */
function answering(body: string, contentType: string): { fetch: typeof fetch; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const fetch = (async (_input: unknown, init?: RequestInit) => {
    signals.push(init!.signal!);
    return new Response(body, { headers: { 'content-type': contentType } });
  }) as typeof globalThis.fetch;
  return { fetch, signals };
}

describe('withAnswerDeadline', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends the deadline once the answer is read, so nothing is left pending after the call', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { fetch, signals } = answering('{"ok":true}', 'application/json');
    const deadlined = withAnswerDeadline(fetch, 60_000);
    await expect((await deadlined('http://model.test/v1/chat/completions')).json()).resolves.toEqual({ ok: true });
    await expect((await deadlined('http://model.test/v1/other')).text()).resolves.toBe('{"ok":true}');
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(60_000);
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
  });

  it('keeps the deadline while the answer is unread, and aborts the call when it passes', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { fetch, signals } = answering('{"ok":true}', 'application/json');
    await withAnswerDeadline(fetch, 1_000)('http://model.test/v1/chat/completions');
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(signals[0]?.reason).toMatchObject({ name: 'TimeoutError' });
  });

  it('works with a fetch whose Response holds its reads read-only, as some fetch libraries do', async () => {
    class SealedResponse extends Response {}
    for (const name of ['json', 'text'] as const) {
      Object.defineProperty(SealedResponse.prototype, name, { value: Response.prototype[name], writable: false });
    }
    const base = (async () => new SealedResponse('{"ok":true}', { headers: { 'content-type': 'application/json' } })) as typeof fetch;
    await expect((await withAnswerDeadline(base, 60_000)('http://model.test/v1/chat/completions')).json()).resolves.toEqual({ ok: true });
  });
});
