// Local stand-in with the agreed signature until the back half (branch hb) lands; replaced by its file on merge.
import type { NewMessage, StoredMessage } from '../../domain/model.js';
import type { FlowResult, ModelCallRecord } from '../../domain/ports/flow.js';
import type { ReplyPlan } from '../../domain/reply-actions.js';
import type { Answer } from '../delivery.js';
import type { ModelFailures } from '../flow-context.js';
import type { TurnScope } from '../turn-context.js';

export function persistPlan(
  _scope: TurnScope,
  _flow: FlowResult,
  _plan: ReplyPlan,
  _failures: ModelFailures,
  _earlier: readonly StoredMessage[],
  _seenUpTo: number | undefined,
  _extraAudit: readonly NewMessage[],
  _extraModelCalls: readonly ModelCallRecord[],
): Promise<Answer> {
  throw new Error('persistPlan: not merged yet');
}
