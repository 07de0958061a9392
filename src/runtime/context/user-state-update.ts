import { isDeepStrictEqual } from 'node:util';
import { StoreError } from '../../domain/errors.js';
import type { UserStateRepository } from '../../domain/ports/store.js';
import { parseUserState, RECENT_TOOL_CALLS, type UserState } from './user-state.js';

/** Tries of a read-change-save before it gives up: each failed try means another writer saved in between. */
const MAX_ATTEMPTS = 5;

/** A state as saved, with the version the store gave it. */
export interface SavedUserState {
  readonly version: number;
  readonly state: UserState;
}

/**
 * Reads the user's state, applies `change` and saves it if nobody saved in between (compare-and-set on the version);
 * otherwise again from a fresh read. Never overwrites a save it did not read.
 * @throws StoreError `conflict` when other saves kept coming between the read and the save; nothing is saved then.
 */
export async function updateUserState(repo: UserStateRepository, userId: string, change: (state: UserState) => UserState): Promise<SavedUserState> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
    const record = await repo.get(userId);
    const state = change(parseUserState(record?.raw).state);
    const version = await repo.save(userId, state, record?.version ?? 0);
    if (version !== false) return { version, state };
  }
  throw new StoreError('conflict', `The state of user ${userId} was saved by others ${MAX_ATTEMPTS} times while this save was being made; nothing was saved.`);
}

/**
 * Saves the state a turn ended with (`next`), which it started from `read`. When another turn or an operator saved
 * the user's state meanwhile (the same user in another conversation, in this process or another), the turn's own
 * changes are applied to the fresh state instead (see {@link rebaseUserState}): no save is lost.
 * @throws StoreError `conflict` as {@link updateUserState}.
 */
export async function saveTurnState(
  repo: UserStateRepository,
  userId: string,
  read: SavedUserState,
  next: UserState,
): Promise<SavedUserState & { readonly rebased: boolean }> {
  const version = await repo.save(userId, next, read.version);
  if (version !== false) return { version, state: next, rebased: false };
  const saved = await updateUserState(repo, userId, (fresh) => rebaseUserState(read.state, next, fresh));
  return { ...saved, rebased: true };
}

/**
 * `theirs` (the state saved meanwhile) with the changes `ours` made to `base` (the state it started from): a field
 * (a flow namespace) ours left alone keeps their value; one ours changed takes ours; the tool calls ours added go
 * after theirs. A reset (ours dropped the earlier tool calls) keeps ours.
 */
export function rebaseUserState(base: UserState, ours: UserState, theirs: UserState): UserState {
  const changed = (key: keyof UserState): boolean => !isDeepStrictEqual(base[key] ?? null, ours[key] ?? null);
  // The chain id and where it stands belong together.
  const chainChanged = changed('responseChainId') || changed('responseChainAt');
  const flows: Record<string, unknown> = { ...theirs.flows };
  for (const namespace of new Set([...Object.keys(base.flows), ...Object.keys(ours.flows)])) {
    if (isDeepStrictEqual(base.flows[namespace], ours.flows[namespace])) continue;
    if (ours.flows[namespace] === undefined) delete flows[namespace];
    else flows[namespace] = ours.flows[namespace];
  }
  return {
    ...theirs,
    role: changed('role') ? ours.role : theirs.role,
    responseChainId: chainChanged ? ours.responseChainId : theirs.responseChainId,
    responseChainAt: chainChanged ? (ours.responseChainAt ?? null) : (theirs.responseChainAt ?? null),
    recentToolCalls: rebaseToolCalls(base.recentToolCalls, ours.recentToolCalls, theirs.recentToolCalls),
    flows,
  };
}

function rebaseToolCalls(
  base: UserState['recentToolCalls'],
  ours: UserState['recentToolCalls'],
  theirs: UserState['recentToolCalls'],
): UserState['recentToolCalls'] {
  if (isDeepStrictEqual(base, ours)) return theirs;
  const added = ours.filter((call) => !base.some((earlier) => isDeepStrictEqual(earlier, call)));
  const appended = isDeepStrictEqual([...base, ...added].slice(-RECENT_TOOL_CALLS), ours);
  return appended ? [...theirs, ...added].slice(-RECENT_TOOL_CALLS) : ours;
}
