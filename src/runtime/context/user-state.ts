import { z } from 'zod';
import type { FlowState, RecentToolCall } from '../../domain/ports/flow.js';
import type { ToolEffects } from '../../domain/ports/tool-dispatch.js';

/** How many recent tool calls the state remembers for the model's service-data block. */
export const RECENT_TOOL_CALLS = 5;

const recentToolCallSchema = z.object({
  name: z.string(),
  arguments: z.string(),
  ok: z.boolean(),
  at: z.string(),
});

/**
 * Per-user state, versioned in the store, loaded at the start of a turn and saved at its end. Rows written before
 * the chain id had one name (`lastResponseId`, `lastToolCalls`) are read under the current names.
 */
export const userStateSchema = z.preprocess(
  (raw) => {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return raw;
    const { lastResponseId, lastToolCalls, ...rest } = raw as Record<string, unknown>;
    return { responseChainId: lastResponseId, recentToolCalls: lastToolCalls, ...rest };
  },
  z.object({
    role: z.string().nullable().default(null),
    /** Responses API chain: the last response id, kept only after a successful call with tools. */
    responseChainId: z.string().nullable().default(null),
    /** Where the chain stands (see `FlowState.responseChainAt`); absent on rows of before, which then start afresh. */
    responseChainAt: z.object({ sessionId: z.string(), seq: z.number().int() }).nullable().default(null),
    recentToolCalls: z.array(recentToolCallSchema).default([]),
    /** Namespaced flow state that tools and flows may set (e.g. `{ documents: { step: 2 } }`). */
    flows: z.record(z.string(), z.unknown()).default({}),
  }),
);

export type UserState = FlowState;

export function emptyUserState(): UserState {
  return { role: null, responseChainId: null, responseChainAt: null, recentToolCalls: [], flows: {} };
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
  return { ...state, recentToolCalls: [...state.recentToolCalls, ...calls].slice(-RECENT_TOOL_CALLS) };
}

/** Applies the flow-state changes a tool call sent back (`null` clears a namespace). The role is the flow's to apply. */
export function applyFlowStateEffects(state: UserState, effects: ToolEffects): UserState {
  if (!effects.flowState) return state;
  const flows: Record<string, unknown> = { ...state.flows };
  for (const [namespace, value] of Object.entries(effects.flowState)) {
    if (value === null || value === undefined) delete flows[namespace];
    else flows[namespace] = value;
  }
  return { ...state, flows };
}
