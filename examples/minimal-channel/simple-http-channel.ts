import type { Acceptance, Channel, ChannelContext, ChannelRoute, ReplyTarget, SentPart } from 'palaver';

/**
 * A minimal two-way channel: `POST /simple` `{ conversation, text }` hands a message to Palaver (202 with the
 * acceptance, 400 when refused); `GET /simple?conversation=…` reads the replies sent so far. One account: the
 * client holding the API key (a real channel decides who is talking from something it verified).
 */
export class SimpleHttpChannel implements Channel {
  readonly name = 'simple';
  readonly capabilities = { maxMessageChars: 2000, streaming: false, typing: false, reactions: false, readReceipts: false };
  readonly routes: readonly ChannelRoute[] = [
    { method: 'POST', path: '/simple', access: 'client', handle: (request) => this.#receive(request) },
    {
      method: 'GET',
      path: '/simple',
      access: 'client',
      handle: (request) => Response.json({ replies: this.#replies.get(new URL(request.url).searchParams.get('conversation') ?? '') ?? [] }),
    },
  ];
  readonly #replies = new Map<string, string[]>();
  #context: ChannelContext | undefined;

  async start(context: ChannelContext): Promise<void> {
    this.#context = context;
  }

  async stop(): Promise<void> {
    this.#context = undefined;
  }

  /** Called by Palaver once per part of a reply, in order. */
  async send(target: ReplyTarget, text: string): Promise<SentPart> {
    const replies = this.#replies.get(target.conversationId) ?? [];
    this.#replies.set(target.conversationId, [...replies, text]);
    return { messageId: `${target.conversationId}:${replies.length}` };
  }

  async #receive(request: Request): Promise<Response> {
    if (!this.#context) return Response.json({ error: { code: 'stopped', message: 'The channel is stopped.' } }, { status: 503 });
    const { conversation, text } = (await request.json()) as { conversation?: unknown; text?: unknown };
    if (typeof conversation !== 'string' || typeof text !== 'string')
      return Response.json({ error: { code: 'invalid_input', message: 'Send { conversation, text } as strings.' } }, { status: 400 });
    try {
      const acceptance: Acceptance = await this.#context.accept({ channel: this.name, accountId: 'simple', conversationId: conversation, text });
      return Response.json(acceptance, { status: 202 });
    } catch (error) {
      return Response.json({ error: { code: 'refused', message: error instanceof Error ? error.message : String(error) } }, { status: 400 });
    }
  }
}
