import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Palaver } from '../../src/app.js';
import { PalaverMetrics } from '../../src/observability/metrics.js';
import { ToolDispatchMetrics } from '../../src/observability/tool-dispatch-metrics.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ModelScript, ScriptedReply } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, lastUserText, type Harness } from '../support/palaver-harness.js';

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.close();
  server = undefined;
  harness = undefined;
});

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks up an order',
  input: z.object({ id: z.number() }),
  run: ({ id }) => ({ id, status: 'shipped' }),
});
const broken = defineTool({
  name: 'broken',
  description: 'Always fails',
  input: z.object({}),
  run: () => {
    throw new Error('the order system is down');
  },
});

/** "order?" → a lookup, then an answer; "broken?" → a failing tool, then an answer; anything else at once. */
const script: ModelScript = (call): ScriptedReply => {
  const last = call.messages[call.messages.length - 1];
  if (last?.type === 'tool_result') return { text: `Result: ${last.output}`, usage: { input: 1500, cached: 1200, output: 80 } };
  if (lastUserText(call) === 'order?') return { toolCalls: [{ name: 'lookup', arguments: { id: 7 } }], usage: { input: 1200, cached: 1000, output: 30 } };
  if (lastUserText(call) === 'broken?') return { toolCalls: [{ name: 'broken', arguments: {} }], usage: { input: 10, output: 5 } };
  return { text: 'You are welcome.', usage: { input: 100, output: 20 } };
};
const PRICES = { scripted: { input: '2.50', cachedInput: '1.25', output: '10' } };

/** The sample values of /metrics, keyed by `name{labels}` as Prometheus prints them. */
async function scrape(url: string): Promise<Map<string, number>> {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    const match = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match) samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

async function start(modelScript: ModelScript = script): Promise<{ palaver: Palaver; url: string }> {
  harness = await createHarness(modelScript);
  const palaver = await harness.start({ model: { prices: PRICES } }, { tools: [lookup, broken] });
  server = await palaver.serve({ port: 0 });
  return { palaver, url: server.url };
}

describe('/metrics after real turns', () => {
  it('shows the exact cost per currency, tokens by model and kind, and model and tool latency by outcome', async () => {
    const { palaver, url } = await start();
    // USD per call = (uncached input × 2.50 + cached × 1.25 + output × 10) / 10^6:
    //   lookup 0.00205 + answer 0.00305 = 0.0051; "thanks" 0.00045; broken (10 × 2.5 + 5 × 10) / 10^6 = 0.000075,
    //   then its answer 0.00305. Total 0.0051 + 0.00045 + 0.000075 + 0.00305 = 0.008675 USD.
    const replies = [
      await palaver.chat({ userId: 'ann', text: 'order?' }),
      await palaver.chat({ userId: 'ann', text: 'thanks' }),
      await palaver.chat({ userId: 'bob', text: 'broken?' }),
    ];
    expect(replies.map((reply) => reply.usage.cost)).toEqual(['0.0051', '0.00045', '0.003125']);

    const metrics = await scrape(url);
    expect(metrics.get('palaver_cost_total{currency="USD"}')).toBe(0.008675);
    expect(metrics.get('palaver_tokens_total{model="scripted",kind="input"}')).toBe(1200 + 1500 + 100 + 10 + 1500);
    expect(metrics.get('palaver_tokens_total{model="scripted",kind="cached"}')).toBe(1000 + 1200 + 1200);
    expect(metrics.get('palaver_tokens_total{model="scripted",kind="output"}')).toBe(30 + 80 + 20 + 5 + 80);
    expect(metrics.get('palaver_model_call_seconds_count{model="scripted",outcome="ok"}')).toBe(5);
    expect(metrics.get('palaver_tool_call_seconds_count{tool="lookup",outcome="ok"}')).toBe(1);
    expect(metrics.get('palaver_tool_call_seconds_count{tool="broken",outcome="error"}')).toBe(1);
    expect(metrics.get('palaver_turn_seconds_count')).toBe(3);
    expect(metrics.get('palaver_inbox_waiting')).toBe(0);
  });

  it('counts a failed model call under its outcome, and the apology turn costs nothing', async () => {
    const { palaver, url } = await start(() => ({ error: { status: 400, message: 'bad request' } }));
    const reply = await palaver.chat({ userId: 'ann', text: 'hello' });
    expect(reply.status).toBe('failed');
    const metrics = await scrape(url);
    expect(metrics.get('palaver_model_call_seconds_count{model="scripted",outcome="refused"}')).toBeGreaterThanOrEqual(1);
    expect(metrics.get('palaver_cost_total{currency="USD"}')).toBe(0);
  });

  it('shows the messages accepted and not yet answered as palaver_inbox_waiting', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const { palaver, url } = await start(async () => {
      calls += 1;
      await gate;
      return { text: 'ok', usage: { input: 1, output: 1 } };
    });
    const first = palaver.chat({ userId: 'ann', text: 'one' });
    const second = palaver.chat({ userId: 'bob', text: 'two' });
    await expect.poll(() => calls).toBe(2);
    expect((await scrape(url)).get('palaver_inbox_waiting')).toBe(2);
    release();
    await Promise.all([first, second]);
    expect((await scrape(url)).get('palaver_inbox_waiting')).toBe(0);
  });
});

describe('palaver_cost_total', () => {
  it('sums the stored decimal amounts exactly: 0.1 + 0.2 USD scrapes as 0.3, not 0.30000000000000004', async () => {
    const metrics = new PalaverMetrics();
    metrics.addCost('USD', '0.1');
    metrics.addCost('USD', '0.2');
    metrics.addCost('CNY', '0.036330');
    const text = await metrics.registry.metrics();
    expect(text).toContain('palaver_cost_total{currency="USD"} 0.3\n');
    expect(text).toContain('palaver_cost_total{currency="CNY"} 0.03633\n');
  });
});

describe('docs/grafana/palaver-dashboard.json', () => {
  it('is valid JSON whose queries name only metrics Palaver exports', async () => {
    const dashboard = JSON.parse(readFileSync(new URL('../../docs/grafana/palaver-dashboard.json', import.meta.url), 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const metrics = new PalaverMetrics();
    // The tool stream's gauges exist where tools are dispatched over Redis Streams.
    new ToolDispatchMetrics(metrics.registry, { length: async () => 0, pending: async () => 0 });
    const exported = new Set<string>();
    for (const metric of await metrics.registry.getMetricsAsJSON()) {
      exported.add(metric.name);
      if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_count', '_sum']) exported.add(metric.name + suffix);
    }
    const queried = dashboard.panels.flatMap((panel) => panel.targets ?? []).flatMap((target) => target.expr.match(/\bpalaver_[a-z_]+/g) ?? []);
    expect(queried.length).toBeGreaterThan(10);
    expect(queried.filter((name) => !exported.has(name))).toEqual([]);
    for (const name of [
      'palaver_cost_total',
      'palaver_tokens_total',
      'palaver_turn_seconds_bucket',
      'palaver_model_call_seconds_bucket',
      'palaver_tool_call_seconds_bucket',
      'palaver_inbox_waiting',
    ])
      expect(queried).toContain(name);
  });
});
