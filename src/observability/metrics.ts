import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * Prometheus metrics of one Palaver instance. Each instance has its own registry, so two instances in one
 * process (tests, embedding) never collide.
 */
export class PalaverMetrics {
  readonly registry = new Registry();
  readonly turns = new Counter({ name: 'palaver_turns_total', help: 'Turns run, by outcome', labelNames: ['status'] as const, registers: [this.registry] });
  readonly turnSeconds = new Histogram({ name: 'palaver_turn_seconds', help: 'Turn duration', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60], registers: [this.registry] });
  readonly modelCalls = new Counter({ name: 'palaver_model_calls_total', help: 'Model calls, by model and path', labelNames: ['model', 'path'] as const, registers: [this.registry] });
  readonly modelFailures = new Counter({ name: 'palaver_model_failures_total', help: 'Failed model calls, by path', labelNames: ['path'] as const, registers: [this.registry] });
  readonly tokens = new Counter({ name: 'palaver_tokens_total', help: 'Tokens, by direction', labelNames: ['direction'] as const, registers: [this.registry] });
  readonly toolCalls = new Counter({ name: 'palaver_tool_calls_total', help: 'Tool calls, by tool and outcome', labelNames: ['tool', 'outcome'] as const, registers: [this.registry] });
  readonly toolLimits = new Counter({ name: 'palaver_tool_limit_hits_total', help: 'Tool calls refused or loops ended by a limit', labelNames: ['limit'] as const, registers: [this.registry] });
  readonly duplicates = new Counter({ name: 'palaver_inbound_duplicates_total', help: 'Redelivered inbound messages ignored', registers: [this.registry] });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
