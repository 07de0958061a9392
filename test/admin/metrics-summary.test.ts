import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { summarizeMetrics } from '../../src/admin/metrics-summary.js';

describe("the dashboard's latency and failure summary", () => {
  it('gives each latency series its count, mean and bucketed p50 and p95 in ms, and only counters that counted', async () => {
    const registry = new Registry();
    const tools = new Histogram({ name: 'palaver_tool_seconds', help: 'Tool latency', labelNames: ['tool'], buckets: [0.1, 0.5, 1, 5], registers: [registry] });
    for (const seconds of [0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.3, 2]) tools.observe({ tool: 'lookup' }, seconds);
    tools.observe({ tool: 'slow' }, 9);
    new Histogram({ name: 'palaver_idle_seconds', help: 'Never observed', registers: [registry] });
    const failures = new Counter({ name: 'palaver_model_failures_total', help: 'Failed model calls', labelNames: ['path'], registers: [registry] });
    failures.inc({ path: 'reply' }, 2);
    new Counter({ name: 'palaver_duplicates_total', help: 'Not an outcome', registers: [registry] }).inc();

    const summary = await summarizeMetrics(registry);
    expect(summary.latencies).toEqual([
      { metric: 'palaver_tool_seconds', help: 'Tool latency', labels: { tool: 'lookup' }, count: 10, meanMs: 270, p50Ms: 100, p95Ms: 5000 },
      { metric: 'palaver_tool_seconds', help: 'Tool latency', labels: { tool: 'slow' }, count: 1, meanMs: 9000, p50Ms: null, p95Ms: null },
    ]);
    expect(summary.outcomes).toEqual([{ metric: 'palaver_model_failures_total', help: 'Failed model calls', labels: { path: 'reply' }, value: 2 }]);
  });
});
