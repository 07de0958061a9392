import { MemoryChannel } from '../../src/channels/memory/memory-channel.js';
import type { ChannelContext } from '../../src/domain/ports/channel.js';

/** A memory channel that keeps the context it was started with, to call the context's reads as a channel would. */
export class ContextKeepingChannel extends MemoryChannel {
  context: ChannelContext | undefined;

  override async start(context: ChannelContext): Promise<void> {
    this.context = context;
    await super.start(context);
  }
}
