/**
 * The floor of the web latency measurement (bench/latency.ts `floor: true`): a stand-in for Palaver that does nothing
 * but relay — `POST /agui` read and parsed, the model asked (global fetch, streaming Chat Completions), each text
 * delta written at once as an AG-UI TEXT_MESSAGE_CONTENT event. No store, no turn, no checks. What the bench then
 * reports as "own time" is what the clients, the loopback and the model server cost on this machine: Palaver's own
 * time is what it measures above this.
 *
 * Run by bench/latency.ts: node --import tsx bench/latency-floor.ts <model base URL>
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const modelBaseUrl = process.argv[2];
if (!modelBaseUrl) throw new Error('usage: latency-floor.ts <model base URL>');

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/html', 'set-cookie': 'visitor=floor; Path=/' });
    res.end('<!doctype html>');
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    relay(JSON.parse(Buffer.concat(chunks).toString('utf8')) as { threadId: string; runId: string; messages: { content: string }[] }, res).catch(() =>
      res.destroy(),
    );
  });
});

async function relay(input: { threadId: string; runId: string; messages: { content: string }[] }, res: import('node:http').ServerResponse): Promise<void> {
  const response = await fetch(`${modelBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer floor' },
    body: JSON.stringify({ model: 'scripted-model', stream: true, messages: [{ role: 'user', content: input.messages.at(-1)?.content ?? '' }] }),
  });
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const send = (event: Record<string, unknown>) => res.write(`data: ${JSON.stringify(event)}\n\n`);
  send({ type: 'RUN_STARTED', threadId: input.threadId, runId: input.runId });
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
      const delta = (JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content;
      if (delta) send({ type: 'TEXT_MESSAGE_CONTENT', messageId: input.runId, delta });
    }
  }
  send({ type: 'RUN_FINISHED', threadId: input.threadId, runId: input.runId });
  res.end();
}

server.listen(0, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
