import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

// Loaded when the first worker starts, as PalaverMetrics does (see metrics.ts).
const require = createRequire(import.meta.url);

/** Prometheus metrics of one tool worker (`palaver worker`), in a registry of its own. */
export class ToolWorkerMetrics {
  readonly registry: PromClient.Registry;
  /**
   * Stream entries handled, by tool and outcome: `ok`, `tool_error` (the tool answered with an error), `duplicate`
   * (answered again from the kept result), `busy` (running on another worker), `cancelled`, `expired` (past its
   * deadline), `failed` (the worker could not run it; retried), `dead` (given up after `tools.maxAttempts`), `malformed`.
   */
  readonly calls: PromClient.Counter<'tool' | 'outcome'>;
  /** Calls whose run ended without a usable result: the tool answered with an error, or the worker could not run it. */
  readonly failures: PromClient.Counter<'tool'>;
  /** Entries taken over from a worker presumed dead (XAUTOCLAIM). */
  readonly reclaims: PromClient.Counter<string>;
  /** Calls moved to `<stream>.dead`. */
  readonly deadLetters: PromClient.Counter<'tool'>;
  /** How long tools ran on this worker. */
  readonly callSeconds: PromClient.Histogram<'tool'>;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const prom = require('prom-client') as typeof PromClient;
    const registry = (this.registry = new prom.Registry());
    this.calls = new prom.Counter({
      name: 'palaver_worker_tool_calls_total',
      help: 'Tool call entries handled by this worker, by tool and outcome',
      labelNames: ['tool', 'outcome'] as const,
      registers: [registry],
    });
    this.failures = new prom.Counter({
      name: 'palaver_worker_tool_failures_total',
      help: 'Tool calls that ended in an error or could not be run, by tool',
      labelNames: ['tool'] as const,
      registers: [registry],
    });
    this.reclaims = new prom.Counter({
      name: 'palaver_worker_reclaims_total',
      help: 'Stream entries taken over from a worker presumed dead (XAUTOCLAIM)',
      registers: [registry],
    });
    this.deadLetters = new prom.Counter({
      name: 'palaver_worker_dead_letters_total',
      help: 'Tool calls moved to the dead-letter stream after tools.maxAttempts, by tool',
      labelNames: ['tool'] as const,
      registers: [registry],
    });
    this.callSeconds = new prom.Histogram({
      name: 'palaver_worker_tool_call_seconds',
      help: 'Time a tool ran on this worker',
      labelNames: ['tool'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    if (options.defaultMetrics) prom.collectDefaultMetrics({ register: registry });
  }
}
