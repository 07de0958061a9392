import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Palaver } from '../../src/app.js';
import { defaultProfile, parseStoredProfile, profileSettingsSchema, validateProfileUpdate, type ProfileDefaults } from '../../src/identity/profile-settings.js';
import type { RunningHttpServer } from '../../src/server/index.js';
import { fuzz, fuzzAsync, replaying } from '../support/fuzz.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Property: profile settings from anyone (an admin, an embedding app, a stored row written by another version) never
// crash the code that reads them: an update is applied whole or refused field by field, what is applied is valid and
// canonical, and a stored row always reads back as valid settings.

const defaults: ProfileDefaults = { interfaceLanguage: 'en', aiLanguage: 'en', timeZone: 'UTC', country: null };

/** Strings near the valid ones (tags, zones, countries in any case and spelling) and far from them. */
const nearlyValid = fc.oneof(
  fc.constantFrom(
    'en',
    'EN-us',
    'pt_BR',
    'zh-hant-tw',
    'x-private',
    'i-klingon',
    'en--US',
    'Europe/Kyiv',
    'europe/kyiv',
    'UTC',
    'Etc/GMT+3',
    '+03:00',
    'CST',
    'GMT+8',
    'zh_CN',
    'Mars/Olympus',
    'ua',
    'UA',
    'XX',
    'usa',
  ),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', '\u0000', '\ud800', 'a'.repeat(10_000)),
);
const fieldValue = fc.oneof({ weight: 4, arbitrary: nearlyValid }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) });
const preferences = fc.record(
  {
    interfaceLanguage: fieldValue,
    aiLanguage: fieldValue,
    timeZone: fieldValue,
    country: fc.oneof(fieldValue, fc.constant(null)),
    extra: fieldValue,
    // The snake_case spelling of settings v1 (seed 003), alone or beside Palaver's.
    interface_language: fieldValue,
    timezone: fieldValue,
  },
  { requiredKeys: [] },
);
/** Updates the rules accept, in any spelling they allow. */
const validPreferences = fc.record(
  {
    interfaceLanguage: fc.constantFrom('en', 'EN-us', 'pt_BR', 'zh-hant-tw', 'uk', ' de '),
    aiLanguage: fc.constantFrom('en', 'ru', 'sr-latn', 'es-419'),
    timeZone: fc.constantFrom('Europe/Kyiv', 'europe/kyiv', 'UTC', 'America/New_York', 'Etc/GMT+3'),
    country: fc.constantFrom('ua', 'DE', null),
  },
  { requiredKeys: [] },
);
/** Update bodies: valid ones, ones shaped like an update with any values, and any JSON at all. */
const updateBody = fc.oneof(
  { weight: 3, arbitrary: fc.record({ preferences: validPreferences }) },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        version: fc.oneof(fc.constant(1), fc.jsonValue({ maxDepth: 0 })),
        preferences,
        privacy: fc.jsonValue({ maxDepth: 1 }),
        notification: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
      },
      { requiredKeys: [] },
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

function expectValid(settings: unknown): void {
  expect(profileSettingsSchema.safeParse(settings).success).toBe(true);
}

describe('profile settings under random input', () => {
  it('applies an update whole or refuses it field by field; what it applies is valid, canonical and reads back the same', () => {
    const current = defaultProfile(defaults);
    fuzz(
      'profile update',
      fc.property(updateBody, (body) => {
        const result = validateProfileUpdate(body, current);
        if (!result.ok) {
          expect(result.errors.length).toBeGreaterThan(0);
          for (const error of result.errors) {
            expect(typeof error.path).toBe('string');
            expect(error.message.length).toBeGreaterThan(0);
          }
          return;
        }
        expectValid(result.settings);
        // Canonical: applying the stored values again changes nothing.
        const again = validateProfileUpdate({ preferences: result.settings.preferences }, result.settings);
        expect(again).toEqual({ ok: true, settings: result.settings });
        // Stored and read back, the same settings, without a problem.
        expect(parseStoredProfile(JSON.stringify(result.settings), defaults)).toEqual({ settings: result.settings });
      }),
      { numRuns: 1_000 },
    );
  });

  it('reads any stored row as valid settings, saying why when it fell back to the defaults', () => {
    const row = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
      fc
        .record(
          {
            version: fc.oneof(fc.constant(1), fc.constant(2), fc.jsonValue({ maxDepth: 0 })),
            preferences,
            privacy: fc.jsonValue({ maxDepth: 1 }),
            notification: fc.jsonValue({ maxDepth: 2 }),
          },
          { requiredKeys: [] },
        )
        .map((value) => JSON.stringify(value)),
    );
    fuzz(
      'stored profile',
      fc.property(row, (raw) => {
        const read = parseStoredProfile(raw, defaults);
        expectValid(read.settings);
        if (read.unreadable) expect(read.settings).toEqual(defaultProfile(defaults));
        else expect(read.problem === undefined || read.problem.includes('defaults stand in')).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  });

  describe('through PATCH /admin/users/:id/profile', () => {
    let harness: Harness;
    let palaver: Palaver;
    let server: RunningHttpServer;
    let userId: string;

    beforeAll(async () => {
      harness = await createHarness(() => ({ text: 'ok' }));
      palaver = await harness.start({ server: { adminToken: TEST_SECRETS.adminToken } });
      server = await palaver.serve({ host: '127.0.0.1', port: 0 });
      await palaver.chat({ userId: 'pat', text: 'hello' });
      const account = await fetch(`${server.url}/admin/accounts/api/pat`, { headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}` } });
      userId = ((await account.json()) as { userId: string }).userId;
    });
    afterAll(async () => {
      await server?.close();
      await harness?.close();
    });

    it('answers 200 with exactly what the rules apply, or 400 naming the fields, never 5xx', async () => {
      let applied = 0;
      let refused = 0;
      const body = fc.oneof(
        { weight: 6, arbitrary: updateBody.map((value) => JSON.stringify(value)) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
      );
      await fuzzAsync(
        'admin profile update',
        fc.asyncProperty(body, async (raw) => {
          const before = (await palaver.profiles.get(userId)).settings;
          const response = await fetch(`${server.url}/admin/users/${userId}/profile`, {
            method: 'PATCH',
            headers: { authorization: `Bearer ${TEST_SECRETS.adminToken}`, 'content-type': 'application/json' },
            body: raw,
            signal: AbortSignal.timeout(10_000),
          });
          const answer = (await response.json()) as { profile?: unknown; error?: { message: string } };
          expect([200, 400], JSON.stringify(answer).slice(0, 300)).toContain(response.status);
          const after = (await palaver.profiles.get(userId)).settings;
          let parsed: unknown;
          try {
            parsed = JSON.parse(raw);
          } catch {
            expect(response.status).toBe(400);
            expect(after).toEqual(before);
            return;
          }
          const expected = validateProfileUpdate(parsed, before);
          if (response.status === 400) {
            refused++;
            expect(answer.error?.message.length).toBeGreaterThan(0);
            expect(after).toEqual(before);
            return;
          }
          applied++;
          expect(expected.ok).toBe(true);
          expect(answer.profile).toEqual(expected.ok ? expected.settings : undefined);
          expect(after).toEqual(expected.ok ? expected.settings : undefined);
        }),
        { numRuns: 150, timeout: 15_000 },
      );
      // Both sides of the rules are reached (not checked when one case is replayed).
      if (!replaying) {
        expect(applied).toBeGreaterThan(5);
        expect(refused).toBeGreaterThan(5);
      }
    }, 120_000);
  });
});
