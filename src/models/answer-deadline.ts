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
      return response;
    } catch (error) {
      clearTimeout(timer);
      throw error;
    }
  }) as typeof fetch;
}
