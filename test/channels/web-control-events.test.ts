import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RunningHttpServer } from '../../src/server/index.js';
import type { ModelScript } from '../../src/testing/index.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { assertValidAguiEvent } from '../server/sse.js';

// Seed 002's control event: a client written to that design listens for server-sent events named `control`
// (`{ type: "tool", status: "pending", toolName }`) while a tool runs. With `channels.web.controlEvents` the AG-UI
// stream carries them beside its own events; the tool's name only where `server.showToolDetails` allows it.

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.close();
  server = harness = undefined;
});

const checkCalendar = defineTool({
  name: 'check_calendar',
  description: 'Lists free slots',
  label: { en: 'Checking the calendar…' },
  input: z.object({ day: z.string() }),
  run: ({ day }) => `free on ${day} at 10:00 (room R-17)`,
});

const model: ModelScript = (call) => {
  const last = call.messages.at(-1);
  if (last?.type === 'tool_result') return { text: 'You can come at ten.' };
  return { toolCalls: [{ name: 'check_calendar', arguments: { day: 'Friday' }, callId: 'call_cal' }] };
};

/** Server-sent events as an EventSource sees them: the event's name (`message` when unnamed) and its data. */
function namedEvents(wire: string): Array<{ name: string; data: Record<string, unknown> }> {
  return wire
    .split('\n\n')
    .map((block) => {
      const lines = block.split('\n');
      const name =
        lines
          .find((line) => line.startsWith('event:'))
          ?.slice(6)
          .trim() ?? 'message';
      const data = lines
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      return { name, data };
    })
    .filter((event) => event.data !== '')
    .map((event) => ({ name: event.name, data: JSON.parse(event.data) as Record<string, unknown> }));
}

async function runWire(config: Record<string, unknown>): Promise<string> {
  harness = await createHarness(model);
  const palaver = await harness.start(config, { tools: [checkCalendar] });
  server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  const response = await fetch(`${server.url}/agui`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      threadId: 't-control',
      runId: 'r-control',
      messages: [{ id: 'u-1', role: 'user', content: 'When can I come on Friday?' }],
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

describe('tool progress as seed 002 control events', { timeout: 60_000 }, () => {
  it('are sent as named `control` events with the label and no tool name, beside valid AG-UI events', async () => {
    const wire = await runWire({ channels: { web: { controlEvents: true } } });
    const events = namedEvents(wire);
    expect(events.filter((event) => event.name === 'control').map((event) => event.data)).toEqual([
      { type: 'tool', status: 'pending', toolCallId: 'call_cal', label: 'Checking the calendar…' },
      { type: 'tool', status: 'done', toolCallId: 'call_cal' },
    ]);
    // The AG-UI events are unchanged: an EventSource's `message` listener sees only them, each valid.
    const agui = events.filter((event) => event.name === 'message').map((event) => event.data);
    agui.forEach(assertValidAguiEvent);
    expect(agui.filter((event) => event['name'] === 'palaver.tool_progress')).toHaveLength(2);
    expect(agui.at(-1)?.['type']).toBe('RUN_FINISHED');
    // Neither kind carries the tool's name, arguments or result.
    expect(wire).not.toContain('check_calendar');
    expect(wire).not.toContain('R-17');
  });

  it('carry the tool name where server.showToolDetails allows showing it', async () => {
    const wire = await runWire({ channels: { web: { controlEvents: true } }, server: { showToolDetails: true } });
    expect(
      namedEvents(wire)
        .filter((event) => event.name === 'control')
        .map((event) => event.data),
    ).toEqual([
      { type: 'tool', status: 'pending', toolCallId: 'call_cal', toolName: 'check_calendar', label: 'Checking the calendar…' },
      { type: 'tool', status: 'done', toolCallId: 'call_cal', toolName: 'check_calendar' },
    ]);
  });

  it('are not sent unless turned on, so AG-UI clients that read every data line meet only AG-UI events', async () => {
    const wire = await runWire({});
    expect(wire).not.toContain('event: control');
    const events = namedEvents(wire);
    expect(events.every((event) => event.name === 'message')).toBe(true);
    events.forEach((event) => assertValidAguiEvent(event.data));
  });
});
