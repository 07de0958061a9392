import { convertCost, sumCosts } from '../../domain/money.js';
import type { OperatorQueries, TranscriptRecord } from '../../domain/ports/operator-queries.js';
import type { RecordedFocus, RecordedModelCall, RecordedTurn } from '../turn-recorder.js';

/** A model call with its cost in the turn's billing currency. */
export type PlaygroundCall = RecordedTurn['calls'][number] | ({ readonly kind: 'model' } & RecordedModelCall & { readonly cost: string });

/** One turn as the playground page draws it: the recorded calls, with what the store holds of the turn. */
export interface PlaygroundTurn {
  readonly correlationId: string;
  readonly startedAt: string;
  readonly conversation: { readonly channel: string; readonly conversationId: string; readonly user: string } | null;
  /** The person's messages the turn answered. */
  readonly person: readonly string[];
  /** The currency the turn is billed in (its conversation's); USD until the conversation is stored. */
  readonly currency: string;
  /** Each model call priced (`cost`, exact) in `currency`: their sum, rounded to 6 places, is what the turn is billed. */
  readonly calls: readonly PlaygroundCall[];
  /** The exact sum of the calls' costs. */
  readonly callsCost: string;
  /** The entities in focus the turn used (agents with focus stages). */
  readonly focus: RecordedFocus | null;
  /** The stored reply, once the turn closed. */
  readonly reply: {
    readonly at: string;
    /** What the person was sent, part by part. */
    readonly parts: readonly string[];
    /** The reply's actions (`agent.replies: actions`), when the model answered with a plan. */
    readonly actions: unknown;
    readonly cost: string;
    /** True when the turn failed and the person got an apology. */
    readonly failed: boolean;
    /** From the first model call to the stored reply. */
    readonly ms: number;
  } | null;
}

/** How many recent conversations are searched for the turns' stored messages: a developer's handful and more. */
const RECENT_CONVERSATIONS = 20;

/**
 * The recorded turns joined with their stored messages (by correlation id): the person's words, the reply's parts,
 * actions and cost. Read from the store on each request; the playground asks about once a second.
 */
export async function playgroundTurns(
  turns: readonly RecordedTurn[],
  queries: OperatorQueries | undefined,
  usdRates: Readonly<Record<string, string>>,
): Promise<PlaygroundTurn[]> {
  const stored = new Map<string, { messages: TranscriptRecord[]; conversation: PlaygroundTurn['conversation']; currency: string }>();
  if (queries !== undefined && turns.length > 0) {
    const page = await queries.conversations({ limit: RECENT_CONVERSATIONS });
    for (const conversation of page.items) {
      const about = { channel: conversation.channel, conversationId: conversation.conversationId, user: conversation.user.displayName ?? conversation.user.id };
      for (const message of await queries.transcript(conversation.sessionId, { audit: true, limit: 500 })) {
        if (message.correlationId === null) continue;
        const entry = stored.get(message.correlationId) ?? { messages: [], conversation: about, currency: conversation.currency };
        entry.messages.push(message);
        stored.set(message.correlationId, entry);
      }
    }
  }
  return turns.map((turn) => {
    const entry = stored.get(turn.correlationId);
    const messages = entry?.messages ?? [];
    const display = messages.filter((message) => message.role === 'assistant' && message.audience === 'display');
    const planned = messages.find((message) => message.role === 'assistant' && message.meta?.['replyPlan'] !== undefined);
    const closing = planned ?? display[0];
    const currency = entry?.currency ?? 'USD';
    const calls = turn.calls.map((call) =>
      call.kind === 'model' && call.usdCost !== undefined ? { ...call, cost: priceIn(call.usdCost, currency, usdRates) } : call,
    );
    return {
      correlationId: turn.correlationId,
      startedAt: turn.startedAt,
      conversation: entry?.conversation ?? null,
      person: messages.filter((message) => message.role === 'user').map((message) => message.content),
      currency,
      calls,
      callsCost: sumCosts(calls.flatMap((call) => ('cost' in call ? [call.cost] : []))),
      focus: turn.focus ?? null,
      reply:
        closing === undefined
          ? null
          : {
              at: closing.createdAt.toISOString(),
              parts: display.map((message) => message.content),
              actions: planned?.meta?.['replyPlan'] ?? null,
              cost: sumCosts([planned, ...display].flatMap((message) => (message === undefined ? [] : [message.cost]))),
              failed: display.some((message) => message.meta?.['error'] === true),
              ms: closing.createdAt.getTime() - Date.parse(turn.startedAt),
            },
    };
  });
}

/** A USD cost in `currency`, converted as Billing converts a turn's sum (exact; the turn rounds its sum once). */
function priceIn(usdCost: string, currency: string, usdRates: Readonly<Record<string, string>>): string {
  return convertCost(usdCost, 'USD', currency, usdRates);
}
