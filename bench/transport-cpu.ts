/**
 * CPU per model call, one transport against another, interleaved: N sequential and then C-concurrent
 * `chat.completions.create` calls through the `openai` SDK against the scripted model server (run in a child process,
 * so that only the client's CPU is counted). Not part of `npm run bench`; run by hand:
 *   node --import tsx bench/transport-cpu.ts [rounds] [sequential] [concurrent-total] [old-transport-module]
 * The optional last argument names a module exporting `createHttpTransport` to compare with (e.g. main's transport).
 */
import { fork } from 'node:child_process';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch } from 'undici';
import { createHttpTransport } from '../src/http-client/http-transport.js';

if (process.argv[2] === 'serve') {
  const { startScriptedModelServer, textScript } = await import('../src/testing/index.js');
  const server = await startScriptedModelServer({ script: textScript('Hello there, this is a short answer.'), maxRecordedCalls: 1 });
  process.send!(server.baseUrl);
} else {
  const [rounds = 5, sequential = 300, concurrentTotal = 1_280] = process.argv.slice(2, 5).map(Number);
  const oldModule = process.argv[5];
  const child = fork(new URL(import.meta.url).pathname, ['serve'], { execArgv: ['--import', 'tsx'] });
  const baseUrl = await new Promise<string>((resolve) => child.once('message', (url) => resolve(String(url))));
  const fetches: Record<string, typeof fetch> = { undici_request: createHttpTransport().fetch };
  if (oldModule) fetches.old_node_http = ((await import(oldModule)) as typeof import('../src/http-client/http-transport.js')).createHttpTransport().fetch;
  const agent = new Agent();
  fetches.undici_fetch = ((input: string, init: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch;
  const clients = Object.fromEntries(Object.entries(fetches).map(([name, f]) => [name, new OpenAI({ baseURL: baseUrl, apiKey: 'x', maxRetries: 0, fetch: f })]));
  const call = (client: OpenAI) => client.chat.completions.create({ model: 'scripted-model', messages: [{ role: 'system', content: 'You are terse.'.repeat(40) }, { role: 'user', content: 'Hi' }] });
  const cpuMs = async (work: () => Promise<void>): Promise<number> => {
    const before = process.cpuUsage();
    await work();
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1_000;
  };
  const results: Record<string, { seq: number[]; conc: number[] }> = {};
  for (const name of Object.keys(clients)) results[name] = { seq: [], conc: [] };
  // Warm-up.
  for (const client of Object.values(clients)) for (let i = 0; i < 200; i++) await call(client);
  for (let round = 0; round < rounds; round++) {
    // Each round starts with another transport, so that none always runs first.
    const order = Object.entries(clients);
    for (const [name, client] of [...order.slice(round % order.length), ...order.slice(0, round % order.length)]) {
      results[name]!.seq.push((await cpuMs(async () => { for (let i = 0; i < sequential; i++) await call(client); })) / sequential);
      results[name]!.conc.push(
        (await cpuMs(async () => {
          let next = 0;
          await Promise.all(Array.from({ length: 64 }, async () => { while (next++ < concurrentTotal) await call(client); }));
        })) / concurrentTotal,
      );
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`node ${process.version}, ${rounds} rounds interleaved; client CPU ms per call (median of rounds)`);
  for (const [name, { seq, conc }] of Object.entries(results)) console.log(`${name.padEnd(16)} sequential ${median(seq).toFixed(3)}  64-concurrent ${median(conc).toFixed(3)}`);
  child.kill();
  process.exit(0);
}
