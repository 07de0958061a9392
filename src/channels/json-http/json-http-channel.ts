import { z } from 'zod';
import { ChannelError } from '../../domain/errors.js';
import type { Channel, ChannelContext, ChannelRoute, ReplyTarget, SentPart } from '../../domain/ports/channel.js';
import type { JsonHttpConfig } from './config.js';

export const JSON_HTTP_CHANNEL = 'json-http';

/** What `POST <path>/messages` takes: the user (your backend vouches for them), their conversation, the text. */
const inboundMessage = z.strictObject({
  user: z.string().min(1).max(200),
  conversation: z.string().min(1).max(200).optional(),
  text: z.string(),
  /** Your id of the message: a second POST with it is a duplicate (no second reply). */
  id: z.string().min(1).max(200).optional(),
});

/** A reply part as `GET <path>/replies` shows it. */
interface StoredPart {
  readonly id: string;
  readonly text: string;
}

/**
 * A two-way channel over plain JSON: your backend posts a person's message, Palaver answers through the pipeline,
 * your backend reads the reply parts back. The example of docs/writing-a-channel.md.
 */
export class JsonHttpChannel implements Channel {
  readonly name = JSON_HTTP_CHANNEL;
  readonly capabilities;
  readonly routes: readonly ChannelRoute[];
  readonly #settings: Pick<JsonHttpConfig, 'keepReplies'>;
  /** Recent reply parts per conversation, for the replies route; the store holds the whole history. */
  readonly #replies = new Map<string, StoredPart[]>();
  #sent = 0;
  #context: ChannelContext | undefined;

  constructor(settings: Pick<JsonHttpConfig, 'path' | 'maxMessageChars' | 'keepReplies'>) {
    this.#settings = settings;
    this.capabilities = { maxMessageChars: settings.maxMessageChars, streaming: false, typing: false, reactions: false, readReceipts: false };
    this.routes = [
      { method: 'POST', path: `${settings.path}/messages`, access: 'client', maxBodyBytes: 256 * 1024, handle: (request) => this.#receive(request) },
      { method: 'GET', path: `${settings.path}/replies`, access: 'client', handle: (request) => this.#read(request) },
    ];
  }

  async start(context: ChannelContext): Promise<void> {
    this.#context = context;
  }

  async stop(): Promise<void> {
    this.#context = undefined;
  }

  /** Called by the pipeline once per reply part, in order, after the part is stored. */
  async send(target: ReplyTarget, text: string): Promise<SentPart> {
    const messageId = `${JSON_HTTP_CHANNEL}-${++this.#sent}`;
    const parts = [...(this.#replies.get(target.conversationId) ?? []), { id: messageId, text }];
    this.#replies.set(target.conversationId, parts.slice(-this.#settings.keepReplies));
    return { messageId };
  }

  async #receive(request: Request): Promise<Response> {
    const context = this.#context;
    if (!context) return problem(503, 'stopped', 'The channel is stopped.');
    const body = inboundMessage.safeParse(await request.json().catch(() => undefined));
    if (!body.success) return problem(400, 'invalid_input', 'Send { user, text } as strings, with conversation and id if you like.');
    const { user, conversation, text, id } = body.data;
    try {
      const acceptance = await context.accept({
        channel: JSON_HTTP_CHANNEL,
        accountId: user,
        conversationId: conversation ?? user,
        text,
        ...(id === undefined ? {} : { messageId: id, dedupeKey: id }),
      });
      return Response.json(acceptance, { status: 202 });
    } catch (error) {
      // An empty or too long text is the caller's to fix; anything else is ours.
      if (error instanceof ChannelError && error.code === 'inbound_invalid') return problem(400, 'inbound_invalid', error.message);
      throw error;
    }
  }

  #read(request: Request): Response {
    const conversation = new URL(request.url).searchParams.get('conversation');
    if (!conversation) return problem(400, 'invalid_input', 'Name the conversation: ?conversation=…');
    return Response.json({ replies: this.#replies.get(conversation) ?? [] });
  }
}

function problem(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status });
}
