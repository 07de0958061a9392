import type { ApiClientOptions } from 'grammy';

type GrammyFetch = NonNullable<ApiClientOptions['fetch']>;

/**
 * A WHATWG `fetch` made fit for grammY's Node build, which aborts its calls with the `abort-controller` package's
 * signal: Node 24's `fetch` (and undici's) refuse that object as "not an instance of AbortSignal", so every Bot API
 * call would fail. The package's signal is followed by a real one; a real signal passes as it is.
 */
export function fetchForGrammy(fetch: typeof globalThis.fetch): GrammyFetch {
  const call = (input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) => {
    const signal = init?.signal;
    if (signal == null || signal instanceof AbortSignal) return fetch(input, init);
    return fetch(input, { ...init, signal: followed(signal) });
  };
  return call as unknown as GrammyFetch;
}

function followed(foreign: Pick<AbortSignal, 'aborted' | 'reason' | 'addEventListener'>): AbortSignal {
  const controller = new AbortController();
  if (foreign.aborted) controller.abort(foreign.reason);
  else foreign.addEventListener('abort', () => controller.abort(foreign.reason), { once: true });
  return controller.signal;
}
