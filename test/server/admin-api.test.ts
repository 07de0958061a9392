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

// Seed 003: a team brings its profiles table as its Python services wrote it (ProfileSettings v1 in snake_case), and
// its admin habits (a PATCH in the same shape). The rows go into the real SQLite file before any turn reads them.
describe('admin API: profiles as seed 003 stores them', () => {
  const SEED_ROW = {
    version: 1,
    preferences: { interface_language: 'zh-CN', ai_language: 'zh-CN', timezone: 'Asia/Shanghai', country: 'CN' },
    privacy: { share_history: false },
    notification: { daily_digest: { hour: 9 } },
  };

  /** A Palaver whose model answers with the language and zone the turn's instructions gave it. */
  async function startWithProfiles() {
    harness = await createHarness((call) => {
      const language = /Language for your answers: (\S+)/.exec(call.instructions)?.[1];
      const zone = /- Time zone: (\S+)/.exec(call.instructions)?.[1];
      return { text: `${language} ${zone}` };
    });
    const palaver = await harness.start({
      server: { adminToken: TEST_SECRETS.adminToken },
      agent: { language: 'en', timezone: 'UTC' },
    });
    const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => server.close());
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}${path}`, { method, headers: admin, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    /** A user with a stored profile row, written as another service would, before any turn of theirs. */
    const userWithRow = async (accountId: string, row: string) => {
      const { user } = await palaver.store.users.resolveAccount({ channel: 'api', accountId });
      await palaver.store.profiles.save(user.id, row);
      return user.id;
    };
    const storedRow = async (userId: string) => (await palaver.store.profiles.get(userId))?.raw;
    const problems = async () => palaver.metrics.registry.getSingleMetricAsString('palaver_profile_read_problems_total');
    return { palaver, call, userWithRow, storedRow, problems };
  }

  it('reads a snake_case row (no version needed) in turns and over GET, keeping its unknown privacy and notification keys', async () => {
    const { palaver, call, userWithRow } = await startWithProfiles();
    const { version: _version, ...withoutVersion } = SEED_ROW;
    const id = await userWithRow('li', JSON.stringify(withoutVersion));
    expect((await palaver.chat({ userId: 'li', text: '你好' })).text).toBe('zh-CN Asia/Shanghai');
    const view = await call('GET', `/admin/users/${id}`);
    expect(view.body).toMatchObject({
      profileStored: true,
      profile: {
        version: 1,
        preferences: { interfaceLanguage: 'zh-CN', aiLanguage: 'zh-CN', timeZone: 'Asia/Shanghai', country: 'CN' },
        privacy: { share_history: false },
        notification: { daily_digest: { hour: 9 } },
      },
    });
    expect(view.body['profileProblem']).toBeUndefined();
  });

  it('takes a PATCH in the seed shape, changes only what it names and writes the row back in its own spelling', async () => {
    const { palaver, call, userWithRow, storedRow } = await startWithProfiles();
    const id = await userWithRow('li', JSON.stringify(SEED_ROW));
    expect((await palaver.chat({ userId: 'li', text: '你好' })).text).toBe('zh-CN Asia/Shanghai');

    const patched = await call('PATCH', `/admin/users/${id}/profile`, {
      version: 1,
      preferences: { ai_language: 'EN-us', timezone: 'Asia/Tokyo' },
      privacy: { share_history: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body['profile']['preferences']).toEqual({ interfaceLanguage: 'zh-CN', aiLanguage: 'en-US', timeZone: 'Asia/Tokyo', country: 'CN' });
    expect(JSON.parse((await storedRow(id))!)).toEqual({
      ...SEED_ROW,
      preferences: { interface_language: 'zh-CN', ai_language: 'en-US', timezone: 'Asia/Tokyo', country: 'CN' },
      privacy: { share_history: true },
    });
    // The turn's cache follows at once.
    expect((await palaver.chat({ userId: 'li', text: 'hi' })).text).toBe('en-US Asia/Tokyo');
  });

  it('refuses abbreviations and offsets as zones with a clear message, and stores language tags canonical', async () => {
    const { call, userWithRow, storedRow } = await startWithProfiles();
    const id = await userWithRow('li', JSON.stringify(SEED_ROW));
    for (const zone of ['CST', 'IST', 'EST']) {
      const refused = await call('PATCH', `/admin/users/${id}/profile`, { preferences: { timezone: zone } });
      expect(refused.status).toBe(400);
      expect(refused.body['error']['fields']).toEqual([
        { path: 'preferences.timezone', message: expect.stringContaining(`"${zone}" is not an IANA time zone name (Area/City): abbreviations`) },
      ]);
    }
    const offset = await call('PATCH', `/admin/users/${id}/profile`, { preferences: { timeZone: 'GMT+8' } });
    expect(offset.body['error']['fields']).toEqual([
      { path: 'preferences.timeZone', message: expect.stringContaining('"GMT+8" is an offset, not a time zone') },
    ]);
    const country = await call('PATCH', `/admin/users/${id}/profile`, { preferences: { country: 'CHN' } });
    expect(country.body['error']['fields']).toEqual([{ path: 'preferences.country', message: expect.stringContaining('ISO 3166-1 alpha-2') }]);
    expect(JSON.parse((await storedRow(id))!)).toEqual(SEED_ROW);

    expect((await call('PATCH', `/admin/users/${id}/profile`, { preferences: { interface_language: 'zh_CN', ai_language: 'zh_hant_tw' } })).status).toBe(200);
    expect(JSON.parse((await storedRow(id))!).preferences).toMatchObject({ interface_language: 'zh-CN', ai_language: 'zh-Hant-TW' });
  });

  it('keeps a row it cannot read: the turn uses the defaults, logs and counts it, PATCH is refused and only PUT replaces it', async () => {
    const { palaver, call, userWithRow, storedRow, problems } = await startWithProfiles();
    const unreadable = JSON.stringify({ version: 2, preferences: { interface_language: 'zh-CN' }, layout: 'v2' });
    const id = await userWithRow('li', unreadable);

    expect((await palaver.chat({ userId: 'li', text: '你好' })).text).toBe('en UTC');
    expect(harness!.logs).toContainEqual(expect.objectContaining({ msg: 'profile unreadable; continuing with the default settings', userId: id }));
    expect(await problems()).toMatch(/palaver_profile_read_problems_total\{part="whole"\} 1$/m);
    const view = await call('GET', `/admin/users/${id}`);
    expect(view.body).toMatchObject({ profileStored: true, profileUnreadable: true, profileProblem: expect.stringContaining('version 2') });

    const patched = await call('PATCH', `/admin/users/${id}/profile`, { preferences: { timezone: 'Asia/Shanghai' } });
    expect(patched.status).toBe(409);
    expect(patched.body['error']).toMatchObject({ code: 'conflict', message: expect.stringContaining(`PUT /admin/users/${id}/profile`) });
    expect(await storedRow(id)).toBe(unreadable);
    // Another turn does not touch it either.
    await palaver.chat({ userId: 'li', text: 'again' });
    expect(await storedRow(id)).toBe(unreadable);

    const replaced = await call('PUT', `/admin/users/${id}/profile`, SEED_ROW);
    expect(replaced.status).toBe(200);
    expect(JSON.parse((await storedRow(id))!)).toEqual(SEED_ROW);
    expect((await palaver.chat({ userId: 'li', text: 'and now?' })).text).toBe('zh-CN Asia/Shanghai');
    const events = (await call('GET', `/admin/users/${id}/events`)).body['events'] as Record<string, any>[];
    expect(events.at(-1)).toMatchObject({ kind: 'admin_change', details: { change: 'profile', replaced: true } });
  });

  it('reads what it can of a row with a field it refuses (CST), counts it, and keeps that field until a PATCH names it', async () => {
    const { palaver, call, userWithRow, storedRow, problems } = await startWithProfiles();
    const id = await userWithRow('li', JSON.stringify({ ...SEED_ROW, preferences: { ...SEED_ROW.preferences, timezone: 'CST' } }));

    expect((await palaver.chat({ userId: 'li', text: '你好' })).text).toBe('zh-CN UTC');
    expect(await problems()).toMatch(/palaver_profile_read_problems_total\{part="fields"\} 1$/m);
    expect((await call('GET', `/admin/users/${id}`)).body['profileProblem']).toMatch(/preferences\.timeZone: "CST"/);

    expect((await call('PATCH', `/admin/users/${id}/profile`, { preferences: { country: 'US' } })).status).toBe(200);
    expect(JSON.parse((await storedRow(id))!).preferences).toEqual({ interface_language: 'zh-CN', ai_language: 'zh-CN', timezone: 'CST', country: 'US' });
    expect((await call('PATCH', `/admin/users/${id}/profile`, { preferences: { timezone: 'America/Chicago' } })).status).toBe(200);
    expect((await palaver.chat({ userId: 'li', text: 'hi' })).text).toBe('zh-CN America/Chicago');
    expect((await call('GET', `/admin/users/${id}`)).body['profileProblem']).toBeUndefined();
  });
});
