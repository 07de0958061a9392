/**
 * A person's settings, version 1: what every answer follows. Languages are BCP-47 tags in canonical case (`en-US`,
 * `zh-Hant-TW`), the zone an IANA name, the country an ISO 3166-1 alpha-2 code (upper case) or null when unknown.
 * The schema that reads and checks them is `src/identity/profile-settings.ts`; it reads the stored row in Palaver's
 * spelling (`interfaceLanguage`, `timeZone`) and in the snake_case one (`interface_language`, `timezone`).
 */
export interface ProfileSettings {
  readonly version: 1;
  readonly preferences: ProfilePreferences;
  /** Free-form JSON, kept as stored: Palaver reads none of it yet, and never drops it. */
  readonly privacy: Readonly<Record<string, unknown>>;
  /** Free-form JSON, kept as stored: Palaver reads none of it yet, and never drops it. */
  readonly notification: Readonly<Record<string, unknown>>;
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

/**
 * A profile update: the settings it makes, or every refused field (nothing is applied then). `unreadable` says why
 * the update was refused as a whole: the stored profile cannot be read, so it is kept as it is until it is replaced.
 */
export type ProfileUpdateResult =
  | { readonly ok: true; readonly settings: ProfileSettings }
  | { readonly ok: false; readonly errors: readonly ProfileFieldError[]; readonly unreadable?: string };

/**
 * A stored profile as read: the settings a turn follows, and `problem` when some of it could not be read. With
 * `unreadable` nothing of it could (not JSON, not an object, a version this Palaver does not read) and the defaults
 * stand in for all of it; otherwise only the fields `problem` names took their defaults.
 */
export interface ProfileRead {
  readonly settings: ProfileSettings;
  readonly problem?: string;
  readonly unreadable?: true;
}

/** An update or replacement the codec accepted: the settings, and the row to store (JSON text). */
export type ProfileWrite =
  | { readonly ok: true; readonly settings: ProfileSettings; readonly row: string }
  | { readonly ok: false; readonly errors: readonly ProfileFieldError[]; readonly unreadable?: string };

/**
 * How the runtime reads, seeds and updates profiles without knowing the schema (the identity module's, handed in by
 * the composition root).
 */
export interface ProfileCodec {
  /** A stored profile, read through the schema; never throws. */
  parse(raw: string): ProfileRead;
  /** A new profile, seeded from the channel's language hint when it is a valid tag. */
  seed(languageHint: string | null): ProfileSettings;
  /**
   * `input` (any subset of the settings) applied to the stored row (`stored`, or a seeded profile when there is
   * none). Only the fields it names change in the row; the rest, unknown keys and fields that cannot be read
   * included, stay as stored. Refused, with `unreadable`, when the stored row cannot be read at all.
   */
  update(input: unknown, stored: string | undefined): ProfileWrite;
  /** `input` as the whole new row, whatever is stored: fields it leaves out take the defaults when read. */
  replace(input: unknown): ProfileWrite;
}
