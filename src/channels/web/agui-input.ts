import type { RunAgentInput } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { z } from 'zod';
import type { InboundMessage } from '../../domain/ports/channel.js';
import { checkAttachments, type AttachmentRules, type ClaimedAttachment } from './attachment-check.js';
import { badTextReason } from './text-check.js';

import { WEB_CHANNEL } from './web-constants.js';

export { WEB_CHANNEL };

/** Longest thread id, run id or user id accepted; they become database keys. */
const MAX_ID_CHARS = 256;

/** Why a request body was refused; `code` is stable, `message` says how to fix it. */
export interface AguiInputProblem {
  readonly code:
    | 'invalid_input'
    | 'no_user_message'
    | 'empty_message'
    | 'message_too_long'
    | 'attachments_off'
    | 'too_many_attachments'
    | 'attachment_too_large'
    | 'attachment_type';
  readonly message: string;
  /** The HTTP status to refuse with; 400 when absent. */
  readonly status?: 400 | 413 | 415;
}

/** The message as read from the body: everything but the account, which the server decides (see `WebIdentity`). */
export type AguiMessage = Omit<InboundMessage, 'accountId'>;

export type AguiInputResult =
  | {
      readonly ok: true;
      readonly kind: 'message';
      readonly input: RunAgentInput;
      readonly message: AguiMessage;
      /** `forwardedProps.userId`, when the client named a user: honoured only for a server client holding the API key. */
      readonly claimedUserId: string | undefined;
    }
  | {
      readonly ok: true;
      /** The run answers a tool call's approval request (`forwardedProps.approval`): a decision, not a message. */
      readonly kind: 'approval';
      readonly input: RunAgentInput;
      readonly approval: ApprovalAnswer;
      readonly claimedUserId: string | undefined;
      readonly languageHint: string | undefined;
    }
  | { readonly ok: false; readonly problem: AguiInputProblem };

/** A person's answer to an approval request, as a run's `forwardedProps.approval` carries it. */
export interface ApprovalAnswer {
  /** The request's id, as the `palaver.approval_requested` event named it. */
  readonly id: string;
  readonly decision: 'approve' | 'decline';
}

/**
 * `forwardedProps.approval`: exactly `{ id, decision }`, the id a plain token-sized string (it names a stored
 * request; a NUL or a lone surrogate could not be looked up anywhere).
 */
const approvalAnswerSchema = z.strictObject({
  id: z
    .string()
    .min(1)
    .max(MAX_ID_CHARS)
    .refine((id) => badTextReason(id) === undefined, 'must not contain NUL or lone surrogates'),
  decision: z.enum(['approve', 'decline']),
});

export interface AguiInputOptions {
  /** Longest accepted text of the user message, in characters. */
  readonly maxInboundChars: number;
  /** From the request: `x-correlation-id`, already checked to be a plain token. */
  readonly correlationId?: string;
  /** From the request: the first `Accept-Language` tag. */
  readonly languageHint?: string;
  /** What files a message may carry (`channels.web.attachments`); absent: none. */
  readonly attachments?: AttachmentRules;
}

/**
 * A file in the last user message, as Palaver takes it: an AG-UI 1.0 `image` or `document` part whose bytes come
 * inline (`source.type: "data"`, base64). A URL or a provider's file handle is refused: the server fetches nothing a
 * client names.
 */
const attachedPartSchema = z.object({
  type: z.enum(['image', 'document']),
  source: z.object({
    type: z.literal('data', { error: 'only inline bytes (source.type "data") are accepted; the server fetches no URL' }),
    value: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64 bytes'),
    mimeType: z.string().min(1).max(100),
  }),
  metadata: z.object({ filename: z.string().max(1_000).optional() }).optional(),
});

/**
 * Reads an AG-UI `RunAgentInput` (already JSON-parsed) into the `InboundMessage` the runtime takes.
 *
 * AG-UI clients send the whole conversation in `messages`, but Palaver keeps history itself, so only the text of
 * the last `user` message is used (string content, or the `text` parts of an array). The thread id is the
 * conversation (a direct one); the run id is the message id and the dedupe key, so a retried run is not answered
 * twice. The account is not read here: `forwardedProps.userId` comes back as `claimedUserId`, for the channel to
 * honour only from a server client. Ids and text with NUL or a lone surrogate are refused (`invalid_input`): not
 * every database can store them.
 */
export function parseAguiInput(body: unknown, options: AguiInputOptions): AguiInputResult {
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issues = parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
      .join('; ');
    return problem('invalid_input', `The body is not an AG-UI RunAgentInput: ${issues}.`);
  }
  const input = parsed.data as RunAgentInput;

  const idProblem = checkId('threadId', input.threadId) ?? checkId('runId', input.runId);
  if (idProblem) return { ok: false, problem: idProblem };
  const userId = readUserId(input.forwardedProps);
  if (typeof userId === 'object') return { ok: false, problem: userId };

  // A run that answers an approval request carries no message: its decision is all it says.
  const answer = readApprovalAnswer(input.forwardedProps);
  if (answer !== undefined && 'code' in answer) return { ok: false, problem: answer };
  if (answer !== undefined) return { ok: true, kind: 'approval', input, approval: answer, claimedUserId: userId, languageHint: options.languageHint };

  const last = [...input.messages].reverse().find((m) => m.role === 'user');
  if (!last || last.role !== 'user') {
    return problem('no_user_message', 'messages has no message with role "user"; send the person\'s text as the last user message.');
  }
  const text = contentText(last.content).trim();
  const files = attachedFiles(last.content);
  if ('code' in files) return { ok: false, problem: files };
  if (files.length > 0 && options.attachments === undefined) {
    return { ok: false, problem: { code: 'attachments_off', status: 415, message: 'This chat takes no attachments; send text only.' } };
  }
  const checked = files.length === 0 || options.attachments === undefined ? [] : checkAttachments(files, options.attachments);
  if ('code' in checked) return { ok: false, problem: checked };
  if (text === '' && checked.length === 0) return problem('empty_message', 'The last user message has no text and no attachment.');
  const textProblem = checkText('the message text', text);
  if (textProblem) return { ok: false, problem: textProblem };
  if (text.length > options.maxInboundChars) {
    return problem('message_too_long', `The message has ${text.length} characters; at most ${options.maxInboundChars} are accepted.`);
  }

  const message: AguiMessage = {
    channel: WEB_CHANNEL,
    conversationId: input.threadId,
    conversationKind: 'direct',
    text,
    ...(checked.length === 0 ? {} : { attachments: checked }),
    // The run id names the message (replies are routed to its SSE stream by it) and keys its dedupe.
    messageId: input.runId,
    dedupeKey: input.runId,
    ...(options.languageHint === undefined ? {} : { languageHint: options.languageHint }),
    ...(options.correlationId === undefined ? {} : { correlationId: options.correlationId }),
  };
  return { ok: true, kind: 'message', input, message, claimedUserId: userId };
}

/** A header value usable as a correlation id: a short plain token, so it is safe in logs. */
export function readCorrelationHeader(value: string | undefined): string | undefined {
  return value !== undefined && /^[\w.:-]{1,128}$/.test(value) ? value : undefined;
}

export { readLanguageHint } from './localised-text.js';

type UserContent = Extract<RunAgentInput['messages'][number], { role: 'user' }>['content'];

function contentText(content: UserContent): string {
  if (typeof content === 'string') return content;
  return content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** The files of the last user message (image and document parts), checked for shape; audio and video are refused. */
function attachedFiles(content: UserContent): ClaimedAttachment[] | AguiInputProblem {
  if (typeof content === 'string') return [];
  const files: ClaimedAttachment[] = [];
  for (const [index, part] of content.entries()) {
    if (part.type === 'text') continue;
    if (part.type !== 'image' && part.type !== 'document') {
      return { code: 'attachment_type', status: 415, message: `Part ${index + 1} is ${part.type}; only images and documents can be attached.` };
    }
    const parsed = attachedPartSchema.safeParse(part);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return { code: 'invalid_input', message: `Part ${index + 1} (${part.type}): ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'is malformed'}.` };
    }
    const { source, metadata } = parsed.data;
    files.push({ base64: source.value, mimeType: source.mimeType, name: metadata?.filename });
  }
  return files;
}

/** `forwardedProps.approval`, when the run carries one: the answer, or why it is refused. */
function readApprovalAnswer(forwardedProps: unknown): ApprovalAnswer | AguiInputProblem | undefined {
  if (typeof forwardedProps !== 'object' || forwardedProps === null || !('approval' in forwardedProps)) return undefined;
  const parsed = approvalAnswerSchema.safeParse((forwardedProps as Record<string, unknown>)['approval']);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? '' : `.${issue.path.join('.')}`;
  return {
    code: 'invalid_input',
    message: `forwardedProps.approval${where}: ${issue?.message ?? 'is malformed'}; send { "id": "<approvalId>", "decision": "approve" | "decline" }.`,
  };
}

function readUserId(forwardedProps: unknown): string | undefined | AguiInputProblem {
  if (typeof forwardedProps !== 'object' || forwardedProps === null) return undefined;
  const userId: unknown = (forwardedProps as Record<string, unknown>)['userId'];
  if (typeof userId !== 'string' || userId === '') return undefined;
  return checkId('forwardedProps.userId', userId) ?? userId;
}

function checkId(field: string, value: string): AguiInputProblem | undefined {
  if (value === '') return { code: 'invalid_input', message: `${field} must not be empty.` };
  if (value.length > MAX_ID_CHARS) return { code: 'invalid_input', message: `${field} is longer than ${MAX_ID_CHARS} characters.` };
  return checkText(field, value);
}

function checkText(field: string, value: string): AguiInputProblem | undefined {
  const reason = badTextReason(value);
  if (reason === 'nul') return { code: 'invalid_input', message: `${field} contains a NUL character (\\u0000), which cannot be stored; remove it.` };
  if (reason === 'lone_surrogate')
    return { code: 'invalid_input', message: `${field} contains a lone UTF-16 surrogate (broken unicode), which cannot be stored; send valid text.` };
  return undefined;
}

function problem(code: AguiInputProblem['code'], message: string): AguiInputResult {
  return { ok: false, problem: { code, message } };
}
