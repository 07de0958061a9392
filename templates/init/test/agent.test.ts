import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createPalaver, loadConfig, type Palaver } from 'palaver';
import { MemoryChannel, startScriptedModelServer, type ScriptedCall, type ScriptedModelServer, type ScriptedReply } from 'palaver/testing';

// The agent of palaver.config.yaml, with this test's own scripted model (a server on loopback) in place of the
// configured one: no API key, no cost, the same answer every run. The script plays the model's part; the test
// checks what the person is sent and what the model was asked.
function model(call: ScriptedCall): ScriptedReply {
  const result = call.messages.findLast((item) => item.type === 'tool_result');
  if (result?.type === 'tool_result') return { text: `We are open ${result.output}.` };
  return { toolCalls: [{ name: 'opening_hours', arguments: { day: 'saturday' } }] };
}

let server: ScriptedModelServer;
let palaver: Palaver;
const chat = new MemoryChannel();

before(async () => {
  server = await startScriptedModelServer({ script: model, models: ['scripted'] });
  // env: {} keeps the developer's PALAVER_* variables (a real model, a database) out of the test.
  const { config } = loadConfig({
    env: {},
    overrides: {
      model: { provider: 'openai-chat', name: 'scripted', baseUrl: server.baseUrl, prices: { scripted: { input: '0', output: '0' } } },
      database: { url: 'sqlite::memory:' },
      channels: { web: { enabled: false }, telegram: { enabled: false } },
      log: { level: 'warn' },
    },
  });
  palaver = await createPalaver(config, { channels: [chat] });
});

after(async () => {
  await palaver.close();
  await server.close();
});

test('tells a guest the opening hours the tool gives', async () => {
  const said = await chat.say('When are you open on Saturday?', { accountId: 'guest-1' });
  const { outcome } = await chat.reply(said);
  assert.equal(outcome.reply, 'We are open saturday: 10:00–16:00.');
  // The model was asked twice: with the question, then with the tool's result.
  assert.equal(server.calls.length, 2);
  assert.deepEqual(server.calls[0]?.toolNames, ['opening_hours']);
});
