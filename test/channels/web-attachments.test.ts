import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/server/index.js';
import { halfBody, newVisitor, postRun, runInput, send, shownText, type RawResponse } from '../security/attack-kit.js';
import { createHarness, userTexts, type Harness } from '../support/palaver-harness.js';
import { solidPng } from '../support/png.js';
import { readSqliteFile } from '../support/sqlite-file.js';

// Files a visitor attaches: checked on the server by their bytes, bounded per visitor and per address, stored with
// the conversation and shown to the model as images. Real Palaver on SQLite, real HTTP, the scripted model.

let harness: Harness | undefined;
let server: RunningHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await harness?.close();
  harness = server = undefined;
});

async function start(attachments: Record<string, unknown> = {}, model: Record<string, unknown> = {}): Promise<string> {
  harness = await createHarness((call) => ({ text: `echo: ${userTexts(call).at(-1) ?? ''}` }));
  const palaver = await harness.start({ channels: { web: { attachments } }, ...(Object.keys(model).length === 0 ? {} : { model }) });
  server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  return server.url;
}

/** A run whose last user message carries `text` and the given files as AG-UI 1.0 parts. */
function withFiles(threadId: string, text: string, files: readonly { bytes: Buffer; mimeType: string; name?: string; type?: string }[]) {
  return runInput(threadId, text, {
    messages: [
      {
        id: `m-${threadId}`,
        role: 'user',
        content: [
          ...(text === '' ? [] : [{ type: 'text', text }]),
          ...files.map((file) => ({
            type: file.type ?? (file.mimeType.startsWith('image/') ? 'image' : 'document'),
            source: { type: 'data', value: file.bytes.toString('base64'), mimeType: file.mimeType },
            ...(file.name === undefined ? {} : { metadata: { filename: file.name } }),
          })),
        ],
      },
    ],
  });
}

function errorOf(response: RawResponse): { code: string; message: string } {
  return (JSON.parse(response.body) as { error: { code: string; message: string } }).error;
}

function storedFiles(): { inbound: number; attachments: number; bytes: number } {
  return readSqliteFile(harness!.databaseUrl, (db) => ({
    inbound: Number(db.get<{ n: number }>('SELECT count(*) AS n FROM inbound_messages')?.n),
    attachments: Number(db.get<{ n: number }>('SELECT count(*) AS n FROM attachments')?.n),
    bytes: Number(db.get<{ n: number | null }>('SELECT sum(size) AS n FROM attachments')?.n ?? 0),
  }));
}

/** `size` bytes that begin with PNG's signature: what the server takes for a PNG. */
function pngSized(size: number): Buffer {
  const bytes = Buffer.alloc(size, 7);
  solidPng(1, 1, [0, 0, 0]).copy(bytes, 0, 0, 8);
  return bytes;
}

describe('web channel: attachments', { timeout: 30_000 }, () => {
  it('shows an attached image to the model as an image part, keeps it with the conversation and serves it only to its visitor', async () => {
    const base = await start();
    const visitor = await newVisitor(base);
    const png = solidPng(8, 8, [200, 30, 90]);
    const sent = await postRun(base, withFiles('t-image', 'What is on this photo?', [{ bytes: png, mimeType: 'image/png', name: 'C:\\photos\\shoe.png' }]), {
      cookie: visitor.cookie,
    });
    expect(sent.status).toBe(200);
    // The text names the file for every model; the image itself goes as a Chat Completions image_url part.
    expect(shownText(sent)).toBe('echo: What is on this photo?\n[image: shoe.png]');
    const body = harness!.model.calls.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    const user = body.messages.filter((message) => message.role === 'user').at(-1)!;
    expect(user.content).toEqual([
      { type: 'text', text: 'What is on this photo?\n[image: shoe.png]' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
    ]);

    const transcript = await send(base, { path: '/conversations/messages?id=t-image', headers: { cookie: visitor.cookie } });
    const messages = (JSON.parse(transcript.body) as { messages: { role: string; text: string; attachments?: { id: string; name: string }[] }[] }).messages;
    const attachment = messages[0]!.attachments![0]!;
    expect(messages[0]).toMatchObject({
      role: 'user',
      text: 'What is on this photo?',
      attachments: [{ kind: 'image', mimeType: 'image/png', name: 'shoe.png', size: png.length }],
    });

    const path = `/conversations/attachment?conversation=t-image&id=${attachment.id}`;
    const file = await fetch(new URL(path, base), { headers: { cookie: visitor.cookie } });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect(file.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await file.arrayBuffer()).equals(png)).toBe(true);
    // Another visitor gets nothing of it, even knowing both ids.
    const stranger = await newVisitor(base);
    expect((await send(base, { path, headers: { cookie: stranger.cookie } })).status).toBe(403);

    // The next turn still shows the image (the history, from the store).
    await postRun(base, runInput('t-image', 'And the colour?'), { cookie: visitor.cookie });
    const next = harness!.model.calls.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(next.messages)).toContain(`data:image/png;base64,${png.toString('base64')}`);
  });

  it('takes a file for what its bytes are, not what the browser says, and stores nothing it refuses', async () => {
    const base = await start();
    const visitor = await newVisitor(base);
    const html = Buffer.from('<html><script>alert(document.cookie)</script></html>');
    const pdf = Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n');
    const cases: { files: Parameters<typeof withFiles>[2]; status: number; code: string }[] = [
      { files: [{ bytes: html, mimeType: 'image/png', name: 'cat.png' }], status: 415, code: 'attachment_type' },
      { files: [{ bytes: pdf, mimeType: 'image/png', name: 'cat.png' }], status: 415, code: 'attachment_type' },
      { files: [{ bytes: solidPng(2, 2, [0, 0, 0]), mimeType: 'image/jpeg', name: 'x.jpg' }], status: 415, code: 'attachment_type' },
      { files: [{ bytes: pngSized(5 * 1024 * 1024 + 1), mimeType: 'image/png' }], status: 413, code: 'attachment_too_large' },
      { files: Array.from({ length: 5 }, () => ({ bytes: solidPng(1, 1, [0, 0, 0]), mimeType: 'image/png' })), status: 400, code: 'too_many_attachments' },
      { files: [{ bytes: solidPng(1, 1, [0, 0, 0]), mimeType: 'audio/ogg', type: 'audio' }], status: 415, code: 'attachment_type' },
    ];
    for (const [index, { files, status, code }] of cases.entries()) {
      const response = await postRun(base, withFiles(`t-refused-${index}`, 'look', files), { cookie: visitor.cookie });
      expect({ index, status: response.status, code: errorOf(response).code }).toEqual({ index, status, code });
    }
    // A URL is never fetched for a client.
    const url = runInput('t-url', 'look', {
      messages: [{ id: 'm', role: 'user', content: [{ type: 'image', source: { type: 'url', value: 'http://169.254.169.254/latest/meta-data' } }] }],
    });
    const byUrl = await postRun(base, url, { cookie: visitor.cookie });
    expect(byUrl.status).toBe(400);
    expect(errorOf(byUrl).message).toContain('the server fetches no URL');
    expect(storedFiles()).toEqual({ inbound: 0, attachments: 0, bytes: 0 });
    expect(harness!.model.calls).toHaveLength(0);

    // A PDF that is a PDF is taken, named to the model (not shown as an image) and stored.
    const taken = await postRun(base, withFiles('t-pdf', '', [{ bytes: pdf, mimeType: 'application/pdf', name: 'offer.pdf' }]), { cookie: visitor.cookie });
    expect(taken.status).toBe(200);
    expect(shownText(taken)).toBe('echo: [file: offer.pdf, application/pdf, 1 KB]');
    expect(storedFiles()).toEqual({ inbound: 1, attachments: 1, bytes: pdf.length });
  });

  it('bounds the bytes one visitor keeps stored, refusing more with 413 in their language', async () => {
    const base = await start({ maxStoredBytesPerVisitor: 5_000 });
    const visitor = await newVisitor(base);
    const file = pngSized(2_000);
    for (const i of [1, 2]) {
      expect((await postRun(base, withFiles(`t-q${i}`, `photo ${i}`, [{ bytes: file, mimeType: 'image/png' }]), { cookie: visitor.cookie })).status).toBe(200);
    }
    const third = await postRun(base, withFiles('t-q3', 'photo 3', [{ bytes: file, mimeType: 'image/png' }]), {
      cookie: visitor.cookie,
      'accept-language': 'ru-RU,ru;q=0.9',
    });
    expect(third.status).toBe(413);
    expect(errorOf(third)).toEqual({
      code: 'attachments_quota',
      message: 'Вы уже отправили столько файлов, сколько этот чат может для вас хранить. Пожалуйста, напишите текстом или попросите команду помочь иначе.',
    });
    // Nothing of the refused message is stored; text still goes through, and another visitor may still attach.
    expect(storedFiles()).toEqual({ inbound: 2, attachments: 2, bytes: 4_000 });
    expect((await postRun(base, runInput('t-q3', 'just text'), { cookie: visitor.cookie })).status).toBe(200);
    const other = await newVisitor(base);
    expect((await postRun(base, withFiles('t-other', 'mine', [{ bytes: file, mimeType: 'image/png' }]), { cookie: other.cookie })).status).toBe(200);
  });

  it('bounds the bytes one address sends an hour, whatever cookies it brings', async () => {
    const base = await start({ maxBytesPerHourPerAddress: 5_000 });
    const file = pngSized(2_000);
    const statuses: number[] = [];
    for (const i of [1, 2, 3]) {
      // A fresh visitor each time: a new cookie costs an attacker nothing.
      const visitor = await newVisitor(base);
      const response = await postRun(base, withFiles(`t-a${i}`, 'photo', [{ bytes: file, mimeType: 'image/png' }]), { cookie: visitor.cookie });
      statuses.push(response.status);
      if (response.status === 429) {
        expect(errorOf(response).code).toBe('too_many_attachment_bytes');
        expect(Number(response.headers['retry-after'])).toBeGreaterThan(3_000);
      }
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(storedFiles().bytes).toBe(4_000);
  });

  it('counts a retried run’s files once against its address', async () => {
    const base = await start({ maxBytesPerHourPerAddress: 5_000 });
    const visitor = await newVisitor(base);
    const first = withFiles('t-retry', 'photo', [{ bytes: pngSized(2_000), mimeType: 'image/png' }]);
    expect((await postRun(base, first, { cookie: visitor.cookie })).status).toBe(200);
    // The same run again (a lost response): answered from the store, nothing stored, its bytes not counted again.
    expect((await postRun(base, first, { cookie: visitor.cookie })).status).toBe(200);
    expect((await postRun(base, withFiles('t-retry', 'another', [{ bytes: pngSized(2_000), mimeType: 'image/png' }]), { cookie: visitor.cookie })).status).toBe(
      200,
    );
    expect(storedFiles()).toEqual({ inbound: 2, attachments: 2, bytes: 4_000 });
    expect((await postRun(base, withFiles('t-retry', 'a third', [{ bytes: pngSized(2_000), mimeType: 'image/png' }]), { cookie: visitor.cookie })).status).toBe(
      429,
    );
  });

  it('refuses files when attachments are off, and the body limit stays at 1 MiB', async () => {
    const base = await start({ enabled: false });
    const visitor = await newVisitor(base);
    const off = await postRun(base, withFiles('t-off', 'look', [{ bytes: solidPng(1, 1, [0, 0, 0]), mimeType: 'image/png' }]), { cookie: visitor.cookie });
    expect(off.status).toBe(415);
    expect(errorOf(off).code).toBe('attachments_off');
    // Refused by its declared length alone, before a byte of it is read.
    expect((await halfBody(base, '/agui', 1024 * 1024 + 1, '{')).statusLine).toBe('HTTP/1.1 413 Payload Too Large');
    const page = await send(base, { path: '/' });
    expect(page.body).not.toContain('data-attachments');
  });

  it('names an image in the text only for a model configured without images', async () => {
    const base = await start({}, { images: false });
    const visitor = await newVisitor(base);
    const sent = await postRun(base, withFiles('t-noimg', 'see', [{ bytes: solidPng(2, 2, [1, 2, 3]), mimeType: 'image/png', name: 'a.png' }]), {
      cookie: visitor.cookie,
    });
    expect(sent.status).toBe(200);
    const body = harness!.model.calls.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    expect(body.messages.filter((message) => message.role === 'user').at(-1)!.content).toBe('see\n[image: a.png]');
  });

  it('reads only so many messages with files at once from one address: another waits its turn (429), a message without files does not', async () => {
    const base = await start({ maxUploadsPerAddress: 1 });
    const visitor = await newVisitor(base);
    // An upload that sends its headers (3 MB declared) and a first piece, then holds the rest back.
    const url = new URL(base);
    const held = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => held.on('connect', resolve));
    held.on('error', () => {});
    held.write(
      `POST /agui HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: 3000000\r\nCookie: ${visitor.cookie}\r\n\r\n{"threadId":`,
    );

    const big = () =>
      postRun(base, withFiles(`t-big-${Math.random()}`, 'a big one', [{ bytes: pngSized(1_500_000), mimeType: 'image/png' }]), { cookie: visitor.cookie });
    await expect.poll(async () => (await big()).status, { timeout: 10_000 }).toBe(429);
    const busy = await big();
    expect(errorOf(busy).code).toBe('uploads_busy');
    expect(busy.headers['retry-after']).toBe('5');
    // A message without files is as small as ever: it needs no permit.
    expect((await postRun(base, runInput('t-small', 'just text'), { cookie: visitor.cookie })).status).toBe(200);

    // The held upload goes away: its permit comes back, and the big message is read.
    held.destroy();
    await expect.poll(async () => (await big()).status, { timeout: 10_000 }).toBe(200);
  });
});
