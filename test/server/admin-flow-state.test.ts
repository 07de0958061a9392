import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Seed 000 switches a person's agent into its documents mode from outside the chat (`POST /cargo-assigned` sets
// `doc_flow`); in Palaver that is one flow namespace of the person's state, set through the admin API.

let harness: Harness | undefined;
let closeServer: (() => Promise<void>) | undefined;
afterEach(async () => {
  await closeServer?.();
  await harness?.close();
  harness = closeServer = undefined;
});

const admin = { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' };

async function start() {
  // The model says which flow it was told of, as the service data shows it.
  harness = await createHarness((call) => ({ text: /- flow documents: (.*)/.exec(call.instructions)?.[1] ?? 'no documents flow' }));
  const palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  closeServer = () => server.close();
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = admin) => {
    const response = await fetch(`${server.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  await palaver.chat({ userId: 'carrier', text: 'hello' });
  const userId = (await call('GET', '/admin/accounts/api/carrier')).body['userId'] as string;
  return { palaver, call, userId };
}

describe('admin API: a flow state set from outside the conversation', () => {
  it('puts the person in a flow for their next turn, replaces and clears it, and audits each change', async () => {
    const { palaver, call, userId } = await start();
    const put = await call('PUT', `/admin/users/${userId}/flows/documents`, { state: { cargoId: 'C-17', step: 'assigned' } });
    expect(put).toEqual({ status: 200, body: { namespace: 'documents', state: { cargoId: 'C-17', step: 'assigned' } } });
    // The cached state is forgotten: the very next turn sees it.
    expect((await palaver.chat({ userId: 'carrier', text: 'what now?' })).text).toBe('{"cargoId":"C-17","step":"assigned"}');

    await call('PUT', `/admin/users/${userId}/flows/documents`, { state: { cargoId: 'C-17', step: 'docx received' } });
    expect((await palaver.chat({ userId: 'carrier', text: 'and now?' })).text).toBe('{"cargoId":"C-17","step":"docx received"}');

    expect((await call('PUT', `/admin/users/${userId}/flows/documents`, { state: null })).status).toBe(200);
    expect((await palaver.chat({ userId: 'carrier', text: 'done?' })).text).toBe('no documents flow');

    const events = (await call('GET', `/admin/users/${userId}/events`)).body['events'] as Record<string, any>[];
    expect(events.filter((event) => event['details']?.['change'] === 'flow_state').map((event) => event['details'])).toEqual([
      expect.objectContaining({ namespace: 'documents', set: true }),
      expect.objectContaining({ namespace: 'documents', replaced: true }),
      expect.objectContaining({ namespace: 'documents', cleared: true }),
    ]);
  });

  it('refuses what is not a flow state: no admin token, a bad namespace, no state field, too large, an unknown user', async () => {
    const { call, userId } = await start();
    expect((await call('PUT', `/admin/users/${userId}/flows/documents`, { state: 1 }, { 'content-type': 'application/json' })).status).toBe(401);
    expect((await call('PUT', `/admin/users/${userId}/flows/${encodeURIComponent('../role')}`, { state: 1 })).status).toBe(400);
    expect((await call('PUT', `/admin/users/${userId}/flows/documents`, { value: 1 })).status).toBe(400);
    expect((await call('PUT', `/admin/users/${userId}/flows/documents`, { state: 'x'.repeat(20_000) })).status).toBe(400);
    expect((await call('PUT', '/admin/users/no-such-user/flows/documents', { state: 1 })).status).toBe(404);
  });
});
