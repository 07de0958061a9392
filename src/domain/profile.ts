/**
 * A person's settings, version 1: what every answer follows. Languages are BCP-47 tags in canonical case (`en-US`,
 * `zh-Hant-TW`), the zone an IANA name, the country an ISO 3166-1 alpha-2 code (upper case) or null when unknown.
 * The schema that reads and checks them is `src/identity/profile-settings.ts`.
 */
export interface ProfileSettings {
  readonly version: 1;
  readonly preferences: ProfilePreferences;
  /** Kept for later: no privacy setting exists yet. */
  readonly privacy: Readonly<Record<string, never>>;
  /** Kept for later: no notification setting exists yet. */
  readonly notification: Readonly<Record<string, never>>;
}

export interface ProfilePreferences {
  /** The language of Palaver's own texts (apologies, the reset confirmation). */
  readonly interfaceLanguage: string;
  /** The language the agent answers in. */
  readonly aiLanguage: string;
  readonly timeZone: string;
  readonly country: string | null;
}

/** Where a new profile's values come from when neither the person nor their channel said otherwise. */
export type ProfileDefaults = ProfilePreferences;
