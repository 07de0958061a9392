import type { UserState } from './user-state.js';

/** Trimmed, inner runs of white space as one space, lower case in any script: how a trigger and a message compare. */
function normaliseTrigger(text: string): string {
  return text.trim().replace(/\s+/gu, ' ').toLocaleLowerCase();
}

/** Triggers prepared once for matching. */
export function resetTriggerSet(triggers: Readonly<Record<string, readonly string[]>>): readonly string[] {
  return [...new Set(Object.values(triggers).flat().map(normaliseTrigger))].filter(Boolean);
}

/** True when the whole message is one of the triggers (case and surrounding spaces ignored), in any language. */
export function isResetTrigger(text: string, triggers: readonly string[]): boolean {
  if (triggers.length === 0) return false;
  return triggers.includes(normaliseTrigger(text));
}

/**
 * The user's state after a reset: no response chain and no earlier tool calls (both are conversation context the
 * model would otherwise still see); the role stays unless `keepRole` is false; flow state stays.
 */
export function resetUserState(state: UserState, keepRole: boolean): UserState {
  return { ...state, responseChainId: null, responseChainAt: null, recentToolCalls: [], ...(keepRole ? {} : { role: null }) };
}
