import { assertValidAguiEvent } from '../server/sse.js';

export type AguiEvent = Record<string, unknown> & { type: string };

/**
 * Reads an AG-UI SSE response as it arrives, calling `onEvent` with each event (checked against the AG-UI schema).
 * Resolves when the stream ends.
 */
export async function readAguiEvents(response: Response, onEvent: (event: AguiEvent) => void): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data === '') continue;
      const event = JSON.parse(data) as AguiEvent;
      assertValidAguiEvent(event);
      onEvent(event);
    }
  }
}

/**
 * What the chat page shows for a thread: assistant messages by id (discarded ones removed), reactions on the
 * person's messages (by their run id), whether the agent is shown typing, errors, open runs.
 */
export class AguiView {
  readonly messages: Array<{ id: string; text: string }> = [];
  readonly reactions = new Map<string, string>();
  /** True from a `palaver.typing` event until the next message or the run's end (the page also times it out). */
  typing = false;
  readonly errors: string[] = [];
  readonly runs = new Map<string, { events: AguiEvent[]; ended: boolean }>();

  /** Applies one event of run `runId`, as web/chat.js does. */
  apply(runId: string, event: AguiEvent): void {
    const run = this.runs.get(runId) ?? { events: [], ended: false };
    this.runs.set(runId, run);
    run.events.push(event);
    switch (event.type) {
      case 'TEXT_MESSAGE_START':
        this.typing = false;
        this.messages.push({ id: String(event.messageId), text: '' });
        break;
      case 'TEXT_MESSAGE_CONTENT': {
        const message = this.messages.findLast((m) => m.id === event.messageId);
        if (message) message.text += String(event.delta);
        break;
      }
      case 'CUSTOM': {
        const value = event.value as { messageId?: string; emoji?: string } | undefined;
        if (event.name === 'palaver.typing') this.typing = true;
        if (event.name === 'palaver.reaction' && value?.messageId && value.emoji) this.reactions.set(value.messageId, value.emoji);
        if (event.name !== 'palaver.discard' || !value?.messageId) break;
        const index = this.messages.findLastIndex((m) => m.id === value.messageId);
        if (index !== -1) this.messages.splice(index, 1);
        break;
      }
      case 'RUN_ERROR':
        // A failed turn's apology (it carries `metadata.errorId`) is already shown as a message.
        if ((event.metadata as { errorId?: string } | undefined)?.errorId === undefined) this.errors.push(String(event.message));
        run.ended = true;
        this.typing = false;
        break;
      case 'RUN_FINISHED':
        run.ended = true;
        this.typing = false;
        break;
    }
  }

  /** Runs started and not yet ended. */
  get openRuns(): number {
    return [...this.runs.values()].filter((run) => !run.ended).length;
  }
}
