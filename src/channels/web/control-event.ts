import type { TurnProgress } from '../../domain/ports/channel.js';

/**
 * A tool call's progress in the shape of seed 002's control event, for clients written to that design: a server-sent
 * event named `control` whose data is `{ "type": "tool", "status": "pending", "toolName": … }` when a call starts,
 * then the same with `done` or `failed`. Sent beside the AG-UI events (`channels.web.controlEvents`), never instead.
 *
 * The tool's name is in it only with `server.showToolDetails`, as for the AG-UI events: a name can tell a person more
 * than the operator means to show. Without it the event carries the tool's label for people. It never carries the
 * arguments or the result.
 */
export interface ToolControlEvent {
  readonly type: 'tool';
  readonly status: 'pending' | 'done' | 'failed';
  readonly toolCallId: string;
  /** Only with `showToolDetails`. */
  readonly toolName?: string;
  /** The progress line for people, when the call starts and has one. */
  readonly label?: string;
}

/** The control event of one turn progress event, or undefined for progress that is not about a tool. */
export function toolControlEvent(event: TurnProgress, showToolDetails: boolean): ToolControlEvent | undefined {
  if (event.type !== 'tool_call' && event.type !== 'tool_result') return undefined;
  const shown = { type: 'tool', toolCallId: event.callId, ...(showToolDetails ? { toolName: event.name } : {}) } as const;
  if (event.type === 'tool_result') return { ...shown, status: event.isError ? 'failed' : 'done' };
  return { ...shown, status: 'pending', ...(event.label === undefined ? {} : { label: event.label }) };
}

/** One control event as a server-sent event: named, so an `EventSource` hands it to its `control` listeners only. */
export function encodeControlEvent(event: ToolControlEvent): string {
  return `event: control\ndata: ${JSON.stringify(event)}\n\n`;
}
