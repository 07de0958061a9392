/**
 * A `fetch` whose call fails once `timeoutMs` pass before a whole JSON answer is read. The openai SDK bounds each
 * attempt by its `timeout` only until the answer's headers arrive; a server that sends headers and then stalls the
 * body would hold the turn for ever. An event stream (`stream: true`) is exempt once it starts: a long answer may
 * rightly take longer than the timeout to finish, and each of its words is passed on as it arrives.
 */
export function withAnswerDeadline(base: typeof fetch, timeoutMs: number): typeof fetch {
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException(`no whole answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
    timer.unref();
    const signal = init?.signal ? AbortSignal.any([init.signal, deadline.signal]) : deadline.signal;
    try {
      const response = await base(input, { ...init, signal });
      if (response.headers.get('content-type')?.includes('text/event-stream')) clearTimeout(timer);
      else endOnceRead(response, () => clearTimeout(timer));
      return response;
    } catch (error) {
      clearTimeout(timer);
      throw error;
    }
  }) as typeof fetch;
}

/**
 * Calls `end` once the body is read the way the SDK reads a whole answer (`json()`, or `text()` for anything else).
 * Why: a timer left to run out holds the call's signals for `timeoutMs` after the answer is in (about 1.4 KB of heap
 * a call, a minute by default) and then aborts a finished call. A body read another way keeps the timer, as before.
 */
function endOnceRead(response: Response, end: () => void): void {
  // Defined, not assigned: another fetch's Response class may hold `json` read-only on its prototype, which forbids
  // assignment but not an own property of the answer itself.
  const { json, text } = response;
  Object.defineProperties(response, {
    json: { value: () => json.call(response).finally(end), configurable: true, writable: true },
    text: { value: () => text.call(response).finally(end), configurable: true, writable: true },
  });
}
