import type { StoredMessage } from '../../domain/model.js';
import type { FlowState, ResponseChainPoint } from '../../domain/ports/flow.js';

/**
 * Whether a turn in `sessionId` may continue the state's Responses chain, sending only its new messages: the chain
 * must belong to this conversation (a person with several conversations has one state) and must have seen the
 * conversation's newest stored message (`recent`, oldest first). Messages stored since without a turn (recorded
 * history, the account owner's own words) are unknown to it: the turn then sends the whole history, unchained.
 */
export function chainContinues(state: FlowState, sessionId: string, recent: readonly StoredMessage[]): boolean {
  const at = state.responseChainAt;
  if (state.responseChainId === null || at === undefined || at === null || at.sessionId !== sessionId) return false;
  const newest = recent[recent.length - 1];
  return newest === undefined || newest.seq <= at.seq;
}

/**
 * Where a chain stands after a turn stored `stored` (its messages, the reply last): at the reply, when the turn's
 * messages follow directly on the newest message it had seen (`seenUpTo`, undefined when it had seen none). When
 * something was stored between them meanwhile (a recording while the turn ran), the chain never saw it: null, and
 * the next turn goes without the chain.
 */
export function chainPointAfter(sessionId: string, stored: readonly StoredMessage[], seenUpTo: number | undefined): ResponseChainPoint | null {
  const first = stored[0];
  const reply = stored[stored.length - 1];
  if (first === undefined || reply === undefined) return null;
  if (seenUpTo !== undefined && first.seq !== seenUpTo + 1) return null;
  return { sessionId, seq: reply.seq };
}
