import type { OpenTurnRecord, Store } from '../../domain/ports/store.js';
import type { AcceptedMessage, TurnRequest } from './turn-context.js';

type Batch = TurnRequest['messages'];

/** What the inbox handed over, as the turn that answers it must see it. */
export interface FormedBatch {
  /** The messages the turn answers now, oldest first; undefined when there is nothing left to answer. */
  readonly messages: Batch | undefined;
  /** The open turn they belong to, which resumes from its journal. */
  readonly resume?: OpenTurnRecord;
  /** Messages for a later turn: queued again behind this one. */
  readonly later: readonly AcceptedMessage[];
}

/**
 * Forms the batch a turn answers from what the inbox handed over. A message that belongs to an open turn (one a crash
 * or a failed store cut off) is answered by that turn, which resumes with exactly the batch it started with: its
 * other messages are taken over (a process that died held their leases) and the inbox's other messages wait for the
 * next turn. A message already answered meanwhile (by such a turn) is dropped. A turn another process took over is
 * left to it.
 */
export async function formBatch(store: Store, batch: Batch, lease: TurnRequest['lease']): Promise<FormedBatch> {
  const { queued, open } = await store.turns.lookup(batch.map(({ inbound }) => inbound.id));
  const waiting = batch.filter(({ inbound }) => queued.has(inbound.id));
  if (open === undefined) return { messages: asBatch(waiting), later: [] };

  const members = new Set(open.inboundIds);
  const others = waiting.filter(({ inbound }) => !members.has(inbound.id));
  const taken = open.owner === lease.owner || (await store.turns.takeOver(open.id, { from: open.owner, owner: lease.owner, leaseMs: lease.leaseMs }));
  if (!taken) return { messages: asBatch(others), later: [] };

  const here = waiting.filter(({ inbound }) => members.has(inbound.id));
  const template = here[0] ?? batch[0];
  const missing = open.inboundIds.filter((id) => !here.some(({ inbound }) => inbound.id === id));
  const fetched =
    missing.length === 0
      ? []
      : (await store.inbound.listQueued(open.sessionId))
          .filter((record) => missing.includes(record.id))
          .map((inbound): AcceptedMessage => ({ ...template, inbound, signal: undefined }));
  const order = (message: AcceptedMessage) => open.inboundIds.indexOf(message.inbound.id);
  const messages = asBatch([...here, ...fetched].sort((a, b) => order(a) - order(b)));
  // Every message of the turn was answered meanwhile: nothing to resume.
  if (messages === undefined) return { messages: asBatch(others), later: [] };
  return { messages, resume: open, later: others };
}

function asBatch(messages: readonly AcceptedMessage[]): Batch | undefined {
  return messages.length === 0 ? undefined : (messages as unknown as Batch);
}
