/**
 * Replies as actions: what a plan adds to a turn (bench/run.ts scenario `actions`). A typical plan of five actions —
 * a reaction, typing, two short messages, a wait, a quoted reply — is checked as a turn checks it (JSON, schema,
 * limits, the message ids the model was shown), then carried out by `runPlan` on a channel that answers at once.
 * Storing the plan is excluded: it is the turn's one transaction, measured by the turn scenarios.
 *
 * - check: a tight loop, wall time per turn.
 * - check + dispatch: turn after turn, wall time per turn, the plan's waits and typing set to 0 s (same shape,
 *   same work, no pauses).
 * - paced: many turns at once with the plan as written (its pauses, seconds long, on real timers), measured as the
 *   process's CPU time per turn: the work the pacing's timers cost, not the pauses themselves.
 */
import { performance } from 'node:perf_hooks';
import type { Channel, ReplyTarget } from '../src/domain/ports/channel.js';
import type { ReplyPlan } from '../src/domain/reply-actions.js';
import { silentLogger } from '../src/observability/logger.js';
import { checkReplyPlan, type ReplyPlanCheckOptions } from '../src/runtime/reply-plan/check-plan.js';
import { runPlan, type ReplyPacing } from '../src/runtime/reply-plan/run-plan.js';
import type { TurnScope } from '../src/runtime/turn/turn-context.js';

export interface ReplyActionsResult {
  /** Mean wall time of one check, in microseconds. */
  readonly checkUs: number;
  /** Mean wall time of one check and its dispatch, turn after turn, without pauses, in microseconds. */
  readonly checkAndDispatchUs: number;
  /** CPU time per turn of check and dispatch with the plan's pauses, many turns at once, in microseconds. */
  readonly pacedCpuUs: number;
  /** Turns carried out at once in the paced round. */
  readonly pacedTurns: number;
}

/** The plan a model typically answers with (five actions, six steps), with its pauses or with them set to 0 s. */
function typicalPlan(pauses: boolean): string {
  return JSON.stringify({
    actions: [
      { type: 'add_reaction', emoji: '👍', message_id: 4711 },
      { type: 'fake_typing', seconds: pauses ? 1.5 : 0 },
      { type: 'send_messages', messages: ['Hi Anna! Yes, Tuesday at 10:00 is free.', 'Shall I book it for you?'] },
      { type: 'wait', seconds: pauses ? 2 : 0 },
      { type: 'send_message', text: 'You can also tell me another time that suits you.', reply_to: 4710 },
    ],
  });
}

const PACED = typicalPlan(true);
const UNPACED = typicalPlan(false);
// As a turn builds them: the batch's ids and the history's, a few dozen.
const options: ReplyPlanCheckOptions = {
  limits: { maxActions: 10, maxWaitSeconds: 30, maxTotalWaitSeconds: 60, maxMessageChars: 4096 },
  recentMessageIds: new Set(Array.from({ length: 40 }, (_, index) => String(4680 + index))),
};
const paced: ReplyPacing = { typingCharsPerSecond: 25, maxTypingSeconds: 6, maxTotalWaitSeconds: 60 };
const unpaced: ReplyPacing = { typingCharsPerSecond: 0, maxTypingSeconds: 0, maxTotalWaitSeconds: 60 };

/** `turns` checks and sequential dispatches (after `warmup` of each); `pacedTurns` paced plans at once, after one such round to warm up. */
export async function measureReplyActions(turns: number, warmup: number, pacedTurns: number): Promise<ReplyActionsResult> {
  for (let turn = 0; turn < warmup; turn++) check(PACED);
  let start = performance.now();
  for (let turn = 0; turn < turns; turn++) check(PACED);
  const checkUs = ((performance.now() - start) * 1_000) / turns;

  for (let turn = 0; turn < warmup; turn++) await dispatch(turn, UNPACED, unpaced);
  start = performance.now();
  for (let turn = 0; turn < turns; turn++) await dispatch(turn, UNPACED, unpaced);
  const checkAndDispatchUs = ((performance.now() - start) * 1_000) / turns;

  await dispatchAtOnce(pacedTurns);
  const cpu = process.cpuUsage();
  await dispatchAtOnce(pacedTurns);
  const used = process.cpuUsage(cpu);
  return { checkUs, checkAndDispatchUs, pacedCpuUs: (used.user + used.system) / pacedTurns, pacedTurns };
}

function check(text: string): ReplyPlan {
  const checked = checkReplyPlan(text, options);
  if (!checked.ok) throw new Error(`the typical plan was refused: ${checked.problem}`);
  return checked.plan;
}

/** Checks one turn's plan and carries it out; throws unless its three messages went out. */
async function dispatch(turn: number, text: string, pacing: ReplyPacing): Promise<void> {
  const plan = check(text);
  const displayIds = plan.steps.flatMap((step, index) => (step.kind === 'send' ? [`d${turn}-${index}`] : []));
  const result = await runPlan(scopeFor(turn), { steps: plan.steps, displayIds, deliveries: undefined }, pacing, undefined);
  if (result.sent.length !== 3) throw new Error(`expected 3 messages sent, got ${result.sent.length}`);
}

async function dispatchAtOnce(turns: number): Promise<void> {
  await Promise.all(Array.from({ length: turns }, (_, turn) => dispatch(turn, PACED, paced)));
}

/** A channel that takes every message, typing and reaction at once, with a channel's usual capabilities. */
const channel = {
  name: 'bench',
  capabilities: { maxMessageChars: 4096, streaming: false, typing: true, reactions: true, readReceipts: false },
  send: async () => ({ messageId: '1' }),
  typing: async () => undefined,
  react: async () => undefined,
} as unknown as Channel;
const log = silentLogger();

/**
 * The slice of a turn `runPlan` reads: its channel and target, its log and reply id (no store: the channel delivers
 * online, so there are no outbox records to mark).
 */
function scopeFor(turn: number): TurnScope {
  const target: ReplyTarget = {
    channel: 'bench',
    conversationId: `c${turn}`,
    accountId: `a${turn}`,
    inReplyTo: ['4711'],
    correlationId: `corr-${turn}`,
    sessionId: `s${turn}`,
  };
  return { channel, target, log, replyMessageId: `r${turn}` } as unknown as TurnScope;
}
