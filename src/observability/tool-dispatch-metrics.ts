import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);

/** The stream's length and the calls its group holds unacknowledged, read when /metrics is scraped. */
export interface StreamBacklog {
  length(): Promise<number>;
  pending(): Promise<number>;
}

/**
 * Metrics of the runtime side of `tools.dispatch: "streams"`, on the instance's registry (`PalaverMetrics.registry`):
 * calls by outcome, attempts that timed out, round-trip latency, calls published again after Redis lost its data,
 * and the stream's backlog as gauges collected on scrape.
 */
export class ToolDispatchMetrics {
  /** Calls by outcome: `ok`, `error` (the tool failed), `timeout` (no result after every attempt), `cancelled`, `rejected` (unsigned or badly signed result, with `tools.resultSecret`). */
  readonly calls: PromClient.Counter<'outcome'>;
  /** Attempts whose result did not come within `tools.callTimeoutMs`. */
  readonly attemptTimeouts: PromClient.Counter<string>;
  /** From the outbox write to the result's arrival, for calls that got one. */
  readonly roundTripSeconds: PromClient.Histogram<string>;
  /** Outbox entries published again because Redis lost its data (a restart without persistence). */
  readonly republished: PromClient.Counter<string>;

  constructor(registry: PromClient.Registry, backlog?: StreamBacklog) {
    const prom = require('prom-client') as typeof PromClient;
    const registers = [registry];
    this.calls = new prom.Counter({
      name: 'palaver_tool_dispatch_calls_total',
      help: 'Tool calls sent to workers over Redis Streams, by outcome',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.attemptTimeouts = new prom.Counter({
      name: 'palaver_tool_dispatch_attempt_timeouts_total',
      help: 'Attempts of streamed tool calls that got no result within tools.callTimeoutMs',
      registers,
    });
    this.roundTripSeconds = new prom.Histogram({
      name: 'palaver_tool_dispatch_round_trip_seconds',
      help: 'Streamed tool calls: outbox write to result, including the tool run',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.republished = new prom.Counter({
      name: 'palaver_tool_dispatch_republished_total',
      help: 'Outbox entries published again after Redis lost its data',
      registers,
    });
    if (backlog) {
      // A failed read leaves the gauge at its last value: the scrape itself still succeeds.
      new prom.Gauge({
        name: 'palaver_tool_stream_length',
        help: 'Entries in the tool call stream (XLEN)',
        registers,
        async collect() {
          await backlog.length().then(
            (value) => this.set(value),
            () => undefined,
          );
        },
      });
      new prom.Gauge({
        name: 'palaver_tool_stream_pending',
        help: 'Tool calls delivered to workers and not yet acknowledged (XPENDING)',
        registers,
        async collect() {
          await backlog.pending().then(
            (value) => this.set(value),
            () => undefined,
          );
        },
      });
    }
  }
}
