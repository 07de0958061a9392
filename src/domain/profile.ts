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

/** One refused field of a profile update: its dotted path (`preferences.timeZone`) and why. */
export interface ProfileFieldError {
  readonly path: string;
  readonly message: string;
}

/** A profile update: the settings it makes, or every refused field (nothing is applied then). */
export type ProfileUpdateResult =
  | { readonly ok: true; readonly settings: ProfileSettings }
  | { readonly ok: false; readonly errors: readonly ProfileFieldError[] };

/**
 * How the runtime reads, seeds and updates profiles without knowing the schema (the identity module's, handed in by
 * the composition root).
 */
export interface ProfileCodec {
  /** A stored profile, read through the schema; `problem` when it was unusable and defaults took its place. */
  parse(raw: string): { readonly settings: ProfileSettings; readonly problem?: string };
  /** A new profile, seeded from the channel's language hint when it is a valid tag. */
  seed(languageHint: string | null): ProfileSettings;
  update(input: unknown, current: ProfileSettings): ProfileUpdateResult;
}
