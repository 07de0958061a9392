import { afterEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

let harness: Harness | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await harness?.close();
  harness = undefined;
});

const admin = { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' };

/** A Palaver serving HTTP with an admin token, a chat API key, a role and Ukrainian phone numbers by default. */
async function start() {
  harness = await createHarness((call) => ({ text: call.instructions.includes('You drive the truck.') ? 'as driver' : 'as nobody' }), {
    driver: 'You drive the truck.',
  });
  const palaver = await harness.start({
    server: { apiKey: TEST_SECRETS.serverApiKey, adminToken: TEST_SECRETS.adminToken },
    roles: { definitions: { driver: { tools: [] } } },
    identity: { phones: { defaultRegion: 'UA' } },
  });
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => server.close());
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = admin) => {
    const response = await fetch(`${server.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const userOf = async (accountId: string) => (await call('GET', `/admin/accounts/api/${accountId}`)).body['userId'] as string;
  return { palaver, call, userOf };
}

describe('admin API', () => {
  it('answers only the admin token: not the chat API key, not nobody', async () => {
    const { palaver, call, userOf } = await start();
    await palaver.chat({ userId: 'alice', text: 'hello' });
    const id = await userOf('alice');
    expect((await call('GET', `/admin/users/${id}`, undefined, {})).status).toBe(401);
    expect((await call('GET', `/admin/users/${id}`, undefined, { authorization: `Bearer ${TEST_SECRETS.serverApiKey}` })).status).toBe(401);
    expect((await call('GET', `/admin/users/${id}`, undefined, { authorization: 'Bearer wrong-token-wrong-token' })).status).toBe(401);
    const ok = await call('GET', `/admin/users/${id}`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ user: { id }, accounts: [{ channel: 'api', accountId: 'alice' }], role: null, profileStored: expect.any(Boolean) });
    expect((await call('GET', '/admin/users/no-such-user')).status).toBe(404);
  });

  it('changes a profile, refusing an invalid one field by field, and audits the change without its values', async () => {
    const { palaver, call, userOf } = await start();
    await palaver.chat({ userId: 'alice', text: 'hello' });
    const id = await userOf('alice');
    const bad = await call('PATCH', `/admin/users/${id}/profile`, { preferences: { timeZone: 'Mars/Olympus', country: 'XX' } });
    expect(bad.status).toBe(400);
    expect(bad.body['error']['fields'].map((field: { path: string }) => field.path).sort()).toEqual(['preferences.country', 'preferences.timeZone']);
    expect((await palaver.profiles.get(id)).settings.preferences.timeZone).not.toBe('Mars/Olympus');

    const good = await call('PATCH', `/admin/users/${id}/profile`, { preferences: { timeZone: 'Europe/Kyiv', country: 'ua' } });
    expect(good.status).toBe(200);
    expect(good.body['profile']['preferences']).toMatchObject({ timeZone: 'Europe/Kyiv', country: 'UA' });
    expect((await palaver.profiles.get(id)).settings.preferences).toMatchObject({ timeZone: 'Europe/Kyiv', country: 'UA' });
    const events = (await call('GET', `/admin/users/${id}/events`)).body['events'] as Record<string, any>[];
    expect(events.at(-1)).toMatchObject({
      kind: 'admin_change',
      actor: 'admin',
      details: { change: 'profile', fields: ['preferences.timeZone', 'preferences.country'] },
    });
    expect(JSON.stringify(events)).not.toContain('Europe/Kyiv');
  });

  it('sets a phone in canonical digits, refuses an invalid one and one another user holds', async () => {
    const { palaver, call, userOf } = await start();
    await palaver.chat({ userId: 'alice', text: 'hello' });
    await palaver.chat({ userId: 'bob', text: 'hello' });
    const [alice, bob] = [await userOf('alice'), await userOf('bob')];

    expect(await call('PUT', `/admin/users/${alice}/phone`, { phone: '067 123 45 67' })).toEqual({ status: 200, body: { phone: '380671234567' } });
    expect((await palaver.store.users.findById(alice))?.phone).toBe('380671234567');
    const invalid = await call('PUT', `/admin/users/${bob}/phone`, { phone: '12' });
    expect(invalid.status).toBe(400);
    expect(invalid.body['error']['fields'][0]['path']).toBe('phone');
    const taken = await call('PUT', `/admin/users/${bob}/phone`, { phone: '+380671234567' });
    expect(taken.status).toBe(409);
    expect(taken.body['error']).toMatchObject({ code: 'conflict', holderUserId: alice });
    expect((await palaver.store.users.findById(bob))?.phone).toBeNull();
    expect((await call('PUT', `/admin/users/${alice}/phone`, { phone: null })).body).toEqual({ phone: null });
    expect((await palaver.store.users.findById(alice))?.phone).toBeNull();
    const events = (await call('GET', `/admin/users/${alice}/events`)).body['events'] as Record<string, any>[];
    expect(events.map((event) => event.details.change)).toEqual(['phone_set', 'phone_removed']);
    expect(JSON.stringify(events)).not.toContain('380671234567');
  });

  it('sets a role the next turn follows, and refuses a role that is not configured', async () => {
    const { palaver, call, userOf } = await start();
    expect((await palaver.chat({ userId: 'alice', text: 'hello' })).text).toBe('as nobody');
    const id = await userOf('alice');
    const unknown = await call('PUT', `/admin/users/${id}/role`, { role: 'pilot' });
    expect(unknown.status).toBe(400);
    expect(unknown.body['error']['message']).toContain('known roles: driver');
    expect((await call('PUT', `/admin/users/${id}/role`, { role: 'driver' })).body).toEqual({ role: 'driver' });
    // The turn's cached state is forgotten: the very next message is answered under the new role.
    expect((await palaver.chat({ userId: 'alice', text: 'again' })).text).toBe('as driver');
    expect((await call('GET', `/admin/users/${id}`)).body['role']).toBe('driver');
  });

  it('relinks an account by hand: its conversation and the new user’s role come along, and the move is audited', async () => {
    const { palaver, call, userOf } = await start();
    await palaver.chat({ userId: 'alice', text: 'hello' });
    const first = await palaver.chat({ userId: 'bob', text: 'I am bob' });
    const [alice, bob] = [await userOf('alice'), await userOf('bob')];
    await call('PUT', `/admin/users/${alice}/role`, { role: 'driver' });

    expect((await call('POST', '/admin/relink', { channel: 'api', accountId: 'bob', toUserId: 'nobody' })).status).toBe(404);
    expect((await call('POST', '/admin/relink', { channel: 'api', accountId: 'nobody', toUserId: alice })).status).toBe(404);
    expect((await call('POST', '/admin/relink', { channel: 'api', accountId: 'bob' })).status).toBe(400);
    const moved = await call('POST', '/admin/relink', { channel: 'api', accountId: 'bob', toUserId: alice });
    expect(moved).toEqual({ status: 200, body: { fromUserId: bob, toUserId: alice } });

    expect(await userOf('bob')).toBe(alice);
    // Bob's own conversation is still his to write in, now under Alice's user (and role), with its history.
    const next = await palaver.chat({ userId: 'bob', text: 'still me' });
    expect(next.status).toBe('completed');
    expect(next.text).toBe('as driver');
    expect(next.sessionId).toBe(first.sessionId);
    expect((await palaver.store.sessions.findById(first.sessionId))?.userId).toBe(alice);
    const events = (await call('GET', `/admin/users/${alice}/events`)).body['events'] as Record<string, any>[];
    expect(events.at(-1)).toMatchObject({ kind: 'relink', channel: 'api', accountId: 'bob', fromUserId: bob, toUserId: alice, actor: 'admin' });
  });
});
