import type * as PromClient from 'prom-client';
import type { z } from 'zod';
import type { Channel } from '../domain/ports/channel.js';
import type { ClusterBus } from '../domain/ports/cluster-bus.js';
import type { Store } from '../domain/ports/store.js';
import type { Logger } from '../observability/logger.js';
import type { PalaverMetrics } from '../observability/metrics.js';
import type { Transcribe } from './telegram/transcription.js';
import type { TranscriptionSettings } from './telegram/transcription-settings.js';

/**
 * What every channel's config slice holds besides its own settings: `enabled` (`palaver chat` and `palaver telegram
 * sync` turn every configured channel off with `enabled: false`) and `replies`, which overrides `agent.replies`.
 */
export interface ChannelSettings {
  readonly enabled?: boolean | undefined;
  readonly replies?: 'text' | 'actions' | undefined;
}

/**
 * The agent-wide settings channels show, as PalaverConfig holds them. Named here rather than imported: the config
 * is composed from the plug-ins' slices (src/config imports this folder, never the reverse).
 */
export interface AgentWideSettings {
  readonly agent: { readonly name: string; readonly language: string };
  readonly limits: { readonly maxInboundChars: number };
  readonly server: { readonly host: string; readonly apiKey?: string | undefined; readonly showToolDetails: boolean };
  /** The operators' Telegram chat (told of handoffs through the bot): a chat the bot never takes as a conversation. */
  readonly operators: { readonly notify: { readonly telegramChatId?: string | number | undefined } };
  /** Every plug-in's parsed slice under its key (read one with `sliceOf`). */
  readonly channels: object;
}

/** What the composition root (`createPalaver`) hands a plug-in to build its channel with. */
export interface ChannelDeps {
  /** The config (PalaverConfig), for the agent-wide settings a channel shows (`agent.name`, `server.apiKey`, …). */
  readonly config: AgentWideSettings;
  /** Already a child logger with `{ channel: <name> }`. */
  readonly logger: Logger;
  readonly metrics: PalaverMetrics;
  readonly store: Store;
  /** The bus replies travel on between processes (`cluster.bus`), when there is one. */
  readonly bus: ClusterBus | undefined;
  /** Tells the log scrubber about a secret the channel came to hold (a generated cookie secret). */
  onSecret(secret: string): void;
  /**
   * Speech to text with these settings: the model's endpoint (and key) unless they name another. The transcriber
   * loads with the first voice message, not at start-up. Made by the composition root, so that a channel never
   * imports the models adapter.
   */
  transcriber(settings: TranscriptionSettings): Transcribe;
  /** What the channel calls out over HTTP with (the Palaver's one keep-alive agent, through its outgoing proxy). */
  readonly fetch: typeof globalThis.fetch;
  /**
   * By channel name, what the code starting Palaver hands a channel in place of the outside world (tests give the
   * fake MTProto server's link to `telegram-user`); each plug-in knows the type of its own.
   */
  readonly overrides?: Readonly<Record<string, unknown>>;
}

/** A channel a plug-in built, with its own line in `/health` when it has one. */
export interface CreatedChannel {
  readonly channel: Channel;
  readonly health?: () => { ok: boolean; detail?: string };
}

/**
 * A channel as a plug-in: everything Palaver needs to know about it, in one object its folder exports from
 * `plugin.ts`. `src/channels/registry.ts` lists the plug-ins; the config schema, `createPalaver`, the metrics and
 * the CLI iterate that list. Keep this file's imports light: the config schema loads every plug-in, so a plug-in
 * loads its channel class (and the SDK under it) inside `create`, with a dynamic `import()`.
 */
export interface ChannelPlugin<Key extends string = string, Schema extends z.ZodType<ChannelSettings> = z.ZodType<ChannelSettings>, Metrics = unknown> {
  /** The channel's name (`Channel.name`), e.g. `telegram-bot`; also its label in metrics and `/health`. */
  readonly name: string;
  /** Its slice's key under `channels` in the config file, e.g. `telegram`. */
  readonly configKey: Key;
  /** Its slice of the config (zod; unknown keys refused). It must parse `{}` and `{ enabled: false }`. */
  readonly configSchema: Schema;
  /** Whether the slice turns the channel on (the channel's code loads only then). */
  isEnabled(settings: z.output<Schema>): boolean;
  create(settings: z.output<Schema>, deps: ChannelDeps): Promise<CreatedChannel>;
  /** Its own metrics, registered on every Palaver's registry (on or off); read them with `PalaverMetrics.channel`. */
  readonly metrics?: (prom: typeof PromClient, registry: PromClient.Registry) => Metrics;
  /** Host names Palaver's HTTP server answers to for this channel, besides `server.allowedHosts`. */
  allowedHosts?(settings: z.output<Schema>): readonly string[];
  /**
   * The slice with its relative paths made absolute (and defaulted) as `resolveConfigPaths` does for the rest:
   * `baseDir` is the config file's folder, `dataDir` Palaver's data folder (none for an in-memory SQLite database).
   */
  resolvePaths?(settings: z.output<Schema>, where: { readonly baseDir: string; readonly dataDir: string | undefined }): z.output<Schema>;
}
