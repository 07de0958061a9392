/**
 * A cheap summary of what the dashboard shows, e.g. the newest message's id and the count of waiting messages: when
 * it changes, the dashboard reloads what it shows. It reads the store, so a change made by any process is seen.
 */
export type ChangeProbe = () => Promise<string>;

export interface AdminEventsOptions {
  readonly probe: ChangeProbe;
  /** How often the probe runs per open stream. Default 1000 ms. */
  readonly intervalMs?: number;
  /** A comment line keeps proxies from closing an idle stream. Default every 15 000 ms. */
  readonly heartbeatMs?: number;
  /** Told when a probe fails (the stream goes on). */
  readonly onError?: (error: unknown) => void;
}

/**
 * `GET /admin/events`: a server-sent event stream that says `changed` whenever the probe's answer changes, and
 * nothing else. It carries no data: the page fetches what changed through the ordinary admin routes, with their
 * filters and paging. The probe is awaited before the next one is scheduled, so a slow store is never asked twice
 * at once by one stream; the stream ends when the client goes away.
 */
export function adminEventsResponse(options: AdminEventsOptions, signal?: AbortSignal): Response {
  const intervalMs = options.intervalMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const encoder = new TextEncoder();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      let last: string | undefined;
      let sinceHeartbeat = 0;
      const send = (text: string) => {
        if (!closed) controller.enqueue(encoder.encode(text));
      };
      const stop = () => {
        if (closed) return;
        closed = true;
        clearTimeout(timer);
        try {
          controller.close();
        } catch {
          // already closed by the client
        }
      };
      signal?.addEventListener('abort', stop, { once: true });

      const tick = async () => {
        try {
          const current = await options.probe();
          if (last !== undefined && current !== last) send(`event: changed\ndata: {}\n\n`);
          last = current;
        } catch (error) {
          options.onError?.(error);
        }
        sinceHeartbeat += intervalMs;
        if (sinceHeartbeat >= heartbeatMs) {
          sinceHeartbeat = 0;
          send(': keep-alive\n\n');
        }
        if (!closed) timer = setTimeout(() => void tick(), intervalMs);
      };
      // `ready` first, so the page knows pushes work and stops polling.
      send('retry: 3000\nevent: ready\ndata: {}\n\n');
      void tick();
    },
    cancel() {
      closed = true;
      clearTimeout(timer);
    },
  });
  return new Response(stream, {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-store', 'x-accel-buffering': 'no' },
  });
}
