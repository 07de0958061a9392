import { z } from 'zod';

/** How many recent tool calls the state remembers for the model's service-data block. */
export const RECENT_TOOL_CALLS = 5;

const recentToolCallSchema = z.object({
  name: z.string(),
  arguments: z.string(),
  ok: z.boolean(),
  at: z.string(),
});

/** Per-user state, versioned in the store, loaded at the start of a turn and saved at its end. */
export const userStateSchema = z.object({
  role: z.string().nullable().default(null),
  /** Responses API chain: the last response id, kept only after a successful call with tools. */
  lastResponseId: z.string().nullable().default(null),
  lastToolCalls: z.array(recentToolCallSchema).default([]),
  /** Namespaced flow state that tools and flows may set (e.g. `{ documents: { step: 2 } }`). */
  flows: z.record(z.string(), z.unknown()).default({}),
});

export type UserState = z.infer<typeof userStateSchema>;
export type RecentToolCall = z.infer<typeof recentToolCallSchema>;

export function emptyUserState(): UserState {
  return { role: null, lastResponseId: null, lastToolCalls: [], flows: {} };
}

/**
 * Parses stored state text. A missing row gives an empty state; a corrupt one gives an empty state and a
 * `problem` for the caller to log — a broken row must never stop the person from getting an answer.
 */
export function parseUserState(raw: string | undefined): { state: UserState; problem?: string } {
  if (raw === undefined) return { state: emptyUserState() };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    return { state: emptyUserState(), problem: `state is not JSON: ${(error as Error).message}` };
  }
  const parsed = userStateSchema.safeParse(json);
  if (!parsed.success) return { state: emptyUserState(), problem: `state does not match its schema: ${z.prettifyError(parsed.error)}` };
  return { state: parsed.data };
}

/** Appends tool calls and keeps only the most recent few. */
export function rememberToolCalls(state: UserState, calls: readonly RecentToolCall[]): UserState {
  if (calls.length === 0) return state;
  return { ...state, lastToolCalls: [...state.lastToolCalls, ...calls].slice(-RECENT_TOOL_CALLS) };
}
