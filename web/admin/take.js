// Taking a conversation (POST /admin/conversations/:id/take): it is assigned to the signed-in operator, the agent
// is paused, and its handoff stops telling operators. Used by the conversation view and the waiting list.
import { post } from './api.js';

/** Takes the conversation; `force` takes it over from the operator who has it. Rejects with the server's ApiError. */
export function takeConversation(sessionId, { force = false } = {}) {
  return post(`/admin/conversations/${encodeURIComponent(sessionId)}/take`, force ? { force: true } : {});
}

/**
 * Why a take was refused, as an operator reads it: who has the conversation when another operator took it first
 * (the server's own message speaks to API clients), else the server's message.
 */
export function takeRefusal(error) {
  const holder = error?.details?.assignedTo;
  if (error?.code === 'conflict' && typeof holder === 'string') return `${holder} has taken this conversation; nothing changed.`;
  return error?.message ?? String(error);
}

/** Who took a conversation, as a badge says it: "Taken by you" for the signed-in operator. */
export function takenByText(assignedTo, me) {
  return assignedTo === me ? 'Taken by you' : `Taken by ${assignedTo}`;
}
