import { describe, expect, it } from 'vitest';
import type { ModelInputItem } from '../../src/domain/ports/model-provider.js';
import { OpenAIChatProvider } from '../../src/models/index.js';
import { benchScript, demoScript, startScriptedModelServer, type ScriptedCall } from '../../src/testing/index.js';
import { endpoint, user } from './helpers.js';

const DEMO_TOOLS = ['current_time', 'save_note', 'list_notes'];

function call(messages: ModelInputItem[], toolNames = DEMO_TOOLS): ScriptedCall {
  return { api: 'chat', model: 'm', instructions: '', messages, history: messages, toolNames, hostedMcpLabels: [], stream: false, headers: {}, body: {} };
}

const toolName = async (text: string, tools = DEMO_TOOLS) => (await demoScript(call([user(text)], tools))).toolCalls?.[0];

describe('demoScript', () => {
  it('picks the tool from the last user text', async () => {
    expect(await toolName('What time is it?')).toMatchObject({ name: 'current_time', arguments: {} });
    expect(await toolName('Remember to buy milk')).toMatchObject({ name: 'save_note', arguments: { text: 'to buy milk' } });
    expect(await toolName('note: call mum at 5')).toMatchObject({ name: 'save_note', arguments: { text: 'call mum at 5' } });
    expect(await toolName('Show my notes')).toMatchObject({ name: 'list_notes' });
  });

  it('echoes with a configuration hint when no rule matches or the tool is not offered', async () => {
    const expected = '(scripted reply) You said: «What time is it?». Point Palaver at a real model with PALAVER_LLM_BASE_URL and PALAVER_MODEL.';
    expect(await demoScript(call([user('What time is it?')], []))).toEqual({ text: expected });
    expect((await demoScript(call([user('Hello')]))).text).toContain('You said: «Hello»');
  });

  it('answers in words from a tool result', async () => {
    const after = (name: string, args: string, output: string) =>
      demoScript(call([user('x'), { type: 'tool_call', callId: 'c', name, arguments: args }, { type: 'tool_result', callId: 'c', output }]));
    expect(await after('current_time', '{}', '14:05 Europe/Oslo')).toEqual({ text: 'It is 14:05 Europe/Oslo where you are.' });
    expect(await after('save_note', '{"text":"buy milk"}', '{"ok":true}')).toEqual({ text: 'Saved your note: buy milk' });
    expect(await after('list_notes', '{}', '["buy milk",{"text":"call mum"}]')).toEqual({ text: 'Your notes: buy milk; call mum' });
    expect(await after('list_notes', '{}', '[]')).toEqual({ text: 'You have no notes yet.' });
  });

  it('drives a whole tool round trip through the server', async () => {
    const server = await startScriptedModelServer({ script: demoScript });
    try {
      const model = new OpenAIChatProvider(endpoint(server.baseUrl));
      const tools = DEMO_TOOLS.map((name) => ({ name, description: name, parameters: { type: 'object', properties: {} } }));
      const first = await model.complete({ instructions: '', tools, input: [user('what time is it')] });
      const toolCall = first.toolCalls[0]!;
      expect(toolCall.name).toBe('current_time');
      const second = await model.complete({
        instructions: '',
        tools,
        input: [user('what time is it'), { type: 'tool_call', ...toolCall }, { type: 'tool_result', callId: toolCall.callId, output: '"09:30"' }],
      });
      expect(second.text).toBe('It is 09:30 where you are.');
    } finally {
      await server.close();
    }
  });
});

describe('benchScript', () => {
  it('calls lookup first, then answers after the result', async () => {
    expect(await benchScript(call([user('go')], ['lookup']))).toEqual({ toolCalls: [{ name: 'lookup', arguments: { id: 1 } }] });
    const done = await benchScript(
      call([user('go'), { type: 'tool_call', callId: 'c', name: 'lookup', arguments: '{"id":1}' }, { type: 'tool_result', callId: 'c', output: 'ok' }]),
    );
    expect(done).toEqual({ text: 'Lookup done: ok' });
  });
});
