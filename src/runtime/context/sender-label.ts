/**
 * Who wrote a message in a group conversation, as the model reads it. A group is one session with several people in
 * it: without a label, every earlier message reaches the model as an anonymous `user` turn, and one member's words
 * read as the current person's. Each user message of a group is labelled `[from "Name" #ref] …`, and the
 * instructions say which label is the current person's.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { MAX_NAME_CHARS, quoteForPrompt } from '../../domain/prompt-text.js';

/** The sender of a group message, kept in the stored message's `meta.sender`. */
export interface MessageSender {
  /** The user the server bound to the message, never one the message names. */
  readonly userId: string;
  /** The name they went by on the channel when they wrote it. */
  readonly name: string | null;
}

const senderSchema = z.object({ userId: z.string().min(1), name: z.string().nullable() });

/** The sender stored with a message, when it has a well-formed one (messages of direct chats have none). */
export function senderOf(meta: Readonly<Record<string, unknown>> | null): MessageSender | undefined {
  const parsed = senderSchema.safeParse(meta?.['sender']);
  return parsed.success ? parsed.data : undefined;
}

/**
 * `"Name" #ref`: the name quoted (a name cannot pose as another label or open a heading) and a short ref that tells
 * two members of the same name apart. The ref is a hash of the user id: stable across their messages and turns,
 * and it does not show the id itself.
 */
export function senderLabel(sender: MessageSender): string {
  return `${quoteForPrompt(sender.name ?? 'a member', MAX_NAME_CHARS)} ${senderRef(sender)}`;
}

/** `#3f9a1c`: the part of a label that names the person for good (their name may change between messages). */
export function senderRef(sender: MessageSender): string {
  return `#${createHash('sha256').update(sender.userId).digest('hex').slice(0, 6)}`;
}

/** A group message's text with its sender's label in front; an unknown sender (stored before labels) says so. */
export function labelled(text: string, sender: MessageSender | undefined): string {
  return `[from ${sender === undefined ? 'an unknown member' : senderLabel(sender)}] ${text}`;
}
