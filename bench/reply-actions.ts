/**
 * Replies as actions: what checking a model's plan costs per turn (bench/run.ts scenario `actions`). A typical plan
 * of five actions — a reaction, typing, two short messages, a wait, a quoted reply — is checked as a turn checks it
 * (JSON, schema, limits, the message ids the model was shown), many times over, in this process. Storing the plan is
 * excluded: it is the turn's one transaction, measured by the turn scenarios.
 */
import { performance } from 'node:perf_hooks';
import { checkReplyPlan, type ReplyPlanCheckOptions } from '../src/runtime/reply-plan/check-plan.js';

export interface ReplyActionsResult {
  readonly turns: number;
  /** Mean time of one check, in microseconds. */
  readonly checkUs: number;
}

/** The plan a model typically answers with: five actions, six steps. */
export const TYPICAL_PLAN = JSON.stringify({
  actions: [
    { type: 'add_reaction', emoji: '👍', message_id: 4711 },
    { type: 'fake_typing', seconds: 1.5 },
    { type: 'send_messages', messages: ['Hi Anna! Yes, Tuesday at 10:00 is free.', 'Shall I book it for you?'] },
    { type: 'wait', seconds: 2 },
    { type: 'send_message', text: 'You can also tell me another time that suits you.', reply_to: 4710 },
  ],
});

export function measureReplyActions(turns: number, warmup: number): ReplyActionsResult {
  // As a turn builds them: the batch's ids and the history's, a few dozen.
  const ids = new Set(Array.from({ length: 40 }, (_, index) => String(4680 + index)));
  const options: ReplyPlanCheckOptions = { limits: { maxActions: 10, maxWaitSeconds: 30, maxTotalWaitSeconds: 60, maxMessageChars: 4096 }, recentMessageIds: ids };
  let steps = 0;
  for (let turn = 0; turn < warmup; turn++) steps += check(options);
  const start = performance.now();
  for (let turn = 0; turn < turns; turn++) steps += check(options);
  const elapsed = performance.now() - start;
  if (steps !== (warmup + turns) * 6) throw new Error('the typical plan did not check as six steps');
  return { turns, checkUs: (elapsed * 1_000) / turns };
}

function check(options: ReplyPlanCheckOptions): number {
  const checked = checkReplyPlan(TYPICAL_PLAN, options);
  if (!checked.ok) throw new Error(`the typical plan was refused: ${checked.problem}`);
  return checked.plan.steps.length;
}
