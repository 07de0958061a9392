import pLimit from 'p-limit';
import { parseConfig, resolveConfigPaths, secretsOf, type PalaverConfig, type PalaverConfigInput } from './config/index.js';
import { ConfigError } from './domain/errors.js';
import type { Channel } from './domain/ports/channel.js';
import type { ClusterBus } from './domain/ports/cluster-bus.js';
import type { Flow } from './domain/ports/flow.js';
import type { ModelSet } from './domain/ports/model-provider.js';
import type { IdentityResolver } from './domain/ports/identity.js';
import type { Store } from './domain/ports/store.js';
import type { ToolDispatcher } from './domain/ports/tool-dispatch.js';
import type { ToolHost } from './domain/ports/tool-host.js';
import { LocalIdentityResolver } from './identity/local-identity.js';
import { findPhoneInText } from './identity/phones.js';
import { IdentityAdmin } from './identity/identity-admin.js';
import { OperatorActions } from './admin/operator-actions.js';
import { configuredHandoffNotifier, type HandoffNotifier } from './admin/handoff-notices/index.js';
import { operatorsChatOf } from './channels/telegram-bot/operators-chat.js';
import { OperatorAccounts } from './admin/operator-accounts.js';
import { ProfileService } from './identity/profile-service.js';
import { profileCodec, profileDefaultsFrom } from './identity/profile-settings.js';
import { createLogger, withSecretScrubbing, type Logger } from './observability/logger.js';
import { PalaverMetrics } from './observability/metrics.js';
import { Billing } from './runtime/billing.js';
import { BUDGETED_MAX_OUTPUT_TOKENS, type BudgetSettings } from './runtime/budget-settings.js';
import { composeCalls, countModelCalls, countToolCalls, limitModelCalls, logModelFailures, logToolCalls, timeModelCalls } from './runtime/call-wrappers.js';
import { storableModelOutput, storableToolResults } from './runtime/untrusted-output.js';
import { observeModelCalls, observeToolCalls, type CallObserver } from './runtime/call-observer.js';
import { ConversationSummaries } from './runtime/context/conversation-summaries.js';
import { loadInstructionLibrary } from './runtime/context/instructions.js';
import { resetTriggerSet } from './runtime/context/reset.js';
import { handoffPhraseSet } from './runtime/handoff/handoff-phrases.js';
import { ConversationCache } from './runtime/conversation-cache.js';
import { withFocus, type FocusSettings } from './runtime/context/focused-flow.js';
import { CLASSIFIER_MODELS } from './runtime/context/stage-classifier.js';
import { singleFlow } from './runtime/flows/single-flow.js';
import type { ApprovalDecisions } from './runtime/approvals/approval-decisions.js';
import { Pipeline } from './runtime/pipeline/pipeline.js';
import { settlesWithin } from './runtime/settles-within.js';
import { InlineToolDispatcher } from './runtime/tools/inline-dispatcher.js';
import { createToolHosts, loadToolsModule } from './tool-hosts.js';
import { ToolRegistry } from './runtime/tools/tool-registry.js';
import type { LocalTool } from './tools/define-tool.js';
import type { ToolDescriptor } from './domain/ports/tool-host.js';
import type { Transcriber } from './models/openai-transcription.js';
import type { TranscriptionSettings } from './channels/telegram/transcription-settings.js';
import type { OpenAIClientOptions } from './models/openai-client.js';
import type { Hono } from 'hono';
import type { RunningHttpServer } from './server/http-server.js';
import { MemoryChannel } from './channels/memory/memory-channel.js';
import { configuredChannels } from './channels/configured-channels.js';
import { channelPlugins, sliceOf } from './channels/registry.js';
import { TELEGRAM_USER_CHANNEL } from './channels/telegram-user/channel-name.js';
import type { TelegramNetworkOverride } from './channels/telegram-user/client-factory.js';
import type { ReplySettings } from './runtime/reply-plan/reply-settings.js';
import { genaiPriceLookup } from './models/genai-price-lookup.js';
import { proxySettingsFromEnv } from './config/env-proxy.js';
import { createOutgoingHttp } from './platform/outgoing-http.js';
import { requireModelKeys } from './models/api-key-policy.js';

/** What the embedding code adds to the config. */
export interface PalaverOptions {
  /** Local tools (made with `defineTool`); added to those of `agent.toolsModule`. */
  readonly tools?: readonly LocalTool[];
  /** Further tool hosts, e.g. a custom MCP host. */
  readonly toolHosts?: readonly ToolHost[];
  /** Channels of your own (see "Writing a channel" in the README), started and stopped with Palaver. */
  readonly channels?: readonly Channel[];
  /** Defaults to a pino logger at `config.log.level` on stdout. */
  readonly logger?: Logger;
  /** Folder that relative paths in the config are resolved against (default: the working folder). */
  readonly cwd?: string;
  /** Clock for the runtime facts; tests pass a fixed one. */
  readonly now?: () => Date;
  /** Collect Node's default process metrics too (on for the server, off for embedding). */
  readonly processMetrics?: boolean;
  /**
   * Default true. False: this Palaver never takes over messages a stopped process left unanswered, so no turn runs
   * that its own channels did not start (`palaver telegram sync` uses it only to record history).
   */
  readonly serveInbox?: boolean;
  /** Overrides the bus the web channel relays replies on (default: the `cluster.bus` one; none on the `local` bus). */
  readonly bus?: ClusterBus;
  /** Replaces the way to Telegram for `channels.telegramUser` (tests give the fake MTProto server's link). */
  readonly telegramUserNetwork?: TelegramNetworkOverride;
  /** Watches every model and tool call as it finishes (`palaver dev`'s playground); none by default, at no cost. */
  readonly observer?: CallObserver;
}

/** A reply from `Palaver.chat`. */
export interface ChatReply {
  readonly text: string;
  /** The reply as the channel received it: one part, or several when it was split. */
  readonly parts: readonly string[];
  readonly status: 'completed' | 'failed' | 'duplicate';
  /** With status `failed`: the error id the apology shows and the log carries. */
  readonly errorId?: string;
  readonly sessionId: string;
  readonly correlationId: string;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cost: string; readonly currency: string };
}

/** A running Palaver: one store, one model set, one tool registry, one pipeline, its channels. */
export interface Palaver {
  readonly config: PalaverConfig;
  readonly store: Store;
  readonly metrics: PalaverMetrics;
  readonly logger: Logger;
  readonly tools: ToolRegistry;
  /** The channels Palaver runs, from config and from `options.channels`. */
  readonly channels: readonly Channel[];
  /**
   * Sends `text` as `userId` through the built-in `api` channel (the conversation defaults to the user id) and
   * resolves with the reply that answered it — the same pipeline and persistence as every channel.
   */
  chat(input: { userId: string; text: string; conversationId?: string }): Promise<ChatReply>;
  /** People's profile settings (languages, time zone, country): read and update; a turn follows an update at once. */
  readonly profiles: ProfileService;
  /** Identities by hand (what the admin API serves): users, accounts, profiles, phones, roles, relinks — audited. */
  readonly admin: IdentityAdmin;
  /** Operators in conversations (what the admin API serves): send as the agent, pause, resume, end — audited. */
  readonly operators: OperatorActions;
  /** Tool calls waiting for approval: operators' decisions and the expiry (what the admin API serves; docs/approvals.md). */
  readonly approvals: ApprovalDecisions;
  /** Checks the database; backs `/health`. */
  health(): Promise<Record<string, { ok: boolean; detail?: string }>>;
  /**
   * Configuration problems worth a warning: allowlisted tools no host provides, roles without an instructions
   * file, tool hosts that cannot list their tools. Used at start-up and by `palaver doctor`.
   */
  diagnose(): Promise<string[]>;
  /**
   * Serves the channels' routes (the web chat and AG-UI), `/health` and `/metrics` over HTTP (host and port default
   * to `config.server`). Closing the returned server does not close the Palaver.
   */
  serve(options?: { host?: string; port?: number }): Promise<RunningHttpServer>;
  /** The HTTP app `serve` serves, not listening anywhere (`host`: the interface it is meant for, for the host checks). */
  httpApp(options?: { host?: string }): Promise<Hono>;
  /**
   * Stops the channels (no new messages), waits for running turns and replies being sent for at most `graceMs`
   * (default `server.shutdownGraceMs`), then releases the database and tool connections. Work left when the grace
   * period ends stays leased and is answered, once, after the next start. Safe to call twice.
   */
  close(options?: { readonly graceMs?: number }): Promise<void>;
}

/**
 * Focus settings from the `focus` config section, with the id arguments local tools declare (`focusIds`) added.
 * @throws ConfigError when a tool names an entity type the config does not have.
 */
function focusSettings(config: PalaverConfig['focus'], tools: readonly LocalTool[]): FocusSettings {
  const entities = config.entities.map(({ ttlSeconds, idArguments, ...entity }) => ({
    ...entity,
    ttlMs: ttlSeconds * 1000,
    idArguments: Object.fromEntries(Object.entries(idArguments).map(([tool, names]) => [tool, [...names]])),
  }));
  for (const tool of tools) {
    for (const [argument, type] of Object.entries(tool.focusIds ?? {})) {
      const entity = entities.find((candidate) => candidate.type === type);
      if (entity === undefined)
        throw new ConfigError(`Tool ${tool.name} declares ${argument} an id of "${type}", which focus.entities does not have`, [
          { path: 'focus.entities', message: `no type "${type}"` },
        ]);
      entity.idArguments[tool.name] = [...new Set([...(entity.idArguments[tool.name] ?? []), argument])];
    }
  }
  const { classifier } = config;
  return {
    stages: config.stages,
    entities,
    ...(classifier.enabled
      ? { classifier: { recentMessages: classifier.recentMessages, ...(classifier.model === undefined ? {} : { models: CLASSIFIER_MODELS }) } }
      : {}),
    emptyReplies: Object.fromEntries(config.stages.flatMap((stage) => (stage.emptyReply === undefined ? [] : [[stage.id, stage.emptyReply]]))),
  };
}

/**
 * The flow `agent.flow` names, with the model sets it calls by name: none for `single`; for `staged`, one per stage
 * from `staged.types[agent.type]`, inheriting the primary model's endpoint and fallback.
 * @throws ConfigError when the staged flow has no agent type or its type has no stage models.
 */
async function configuredFlow(config: PalaverConfig, models: OpenAIClientOptions): Promise<{ flow: Flow; namedModels: ReadonlyMap<string, ModelSet> }> {
  if (config.agent.flow === 'single') return { flow: singleFlow, namedModels: new Map() };
  const known = Object.keys(config.staged.types);
  const type = config.agent.type;
  const stages = type === undefined ? undefined : config.staged.types[type];
  if (stages === undefined) {
    const what = type === undefined ? 'agent.type is not set' : `agent.type "${type}" has no models in staged.types`;
    throw new ConfigError(`The staged flow needs the models of its agent type: ${what} (known types: ${known.length > 0 ? known.join(', ') : 'none'})`, [
      { path: type === undefined ? 'agent.type' : 'staged.types', message: type === undefined ? 'required by agent.flow "staged"' : `no entry for "${type}"` },
    ]);
  }
  const { createModelSet } = await import('./models/create-model-set.js');
  const { createStagedFlow, STAGES } = await import('./runtime/flows/staged-flow.js');
  const namedModels = new Map<string, ModelSet>();
  const names = {} as Record<(typeof STAGES)[number], string>;
  for (const stage of STAGES) {
    const name = `${type}.${stage}`;
    const own = Object.fromEntries(Object.entries(stages[stage]).filter(([, value]) => value !== undefined));
    namedModels.set(name, createModelSet({ ...config.model, ...own }, models));
    names[stage] = name;
  }
  return { flow: createStagedFlow({ models: names, prompts: config.staged.prompts }), namedModels };
}

/**
 * Rolling summaries (`agent.memory.summarize`), or undefined when off. Their model is `summarize.model` on the primary
 * model's provider, endpoint and key (as a stage model inherits them), else the primary itself. A writer's claim on a
 * conversation outlasts the longest its call can take: every attempt's timeout, and a minute for the backoff between.
 */
function conversationSummaries(
  config: PalaverConfig,
  models: ModelSet,
  createModelSet: typeof import('./models/create-model-set.js')['createModelSet'],
  calls: OpenAIClientOptions,
): ConversationSummaries | undefined {
  const summarize = config.agent.memory.summarize;
  if (summarize === undefined) return undefined;
  const { timeoutMs, maxRetries } = config.model;
  return new ConversationSummaries({
    afterTokens: summarize.afterTokens,
    keepRecentMessages: summarize.keepRecentMessages,
    provider: summarize.model === undefined ? models.primary : createModelSet({ ...config.model, name: summarize.model, fallback: undefined }, calls).primary,
    claimTtlMs: timeoutMs * (maxRetries + 1) + 60_000,
  });
}

/** The flow's named model sets plus the stage classifier's own model (`focus.classifier.model`), when it has one. */
async function withClassifierModels(
  config: PalaverConfig,
  named: ReadonlyMap<string, ModelSet>,
  models: OpenAIClientOptions,
): Promise<ReadonlyMap<string, ModelSet>> {
  const { classifier } = config.focus;
  if (!classifier.enabled || classifier.model === undefined || config.focus.stages.length === 0) return named;
  const { createModelSet } = await import('./models/create-model-set.js');
  const own = Object.fromEntries(Object.entries(classifier.model).filter(([, value]) => value !== undefined));
  return new Map([...named, [CLASSIFIER_MODELS, createModelSet({ ...config.model, ...own }, models)]]);
}

/**
 * Creates a Palaver from a config object (validated here; see `palaver.config.json` in the README), opens the
 * database (running its migrations) and starts the channels. Adapters load only when the config uses them.
 * @throws ConfigError naming the invalid field.
 * @example
 * const palaver = await createPalaver({ model: { name: 'gpt-4.1-mini', apiKey } }, { tools: [myTool] });
 * const reply = await palaver.chat({ userId: 'alice', text: 'Hello' });
 * await palaver.close();
 */
export async function createPalaver(input: PalaverConfigInput | PalaverConfig, options: PalaverOptions = {}): Promise<Palaver> {
  const config = withBudgetedOutput(resolveConfigPaths(parseConfig(input), options.cwd ?? process.cwd()));
  requireModelKeys(config);
  if (config.model.provider !== 'scripted') return assemble(config, options);
  // The built-in offline model: a scripted OpenAI-compatible server this Palaver runs, and called like any endpoint.
  const { startOfflineModel } = await import('./models/scripted/offline-model.js');
  const offline = await startOfflineModel(config.model);
  try {
    const palaver = await assemble({ ...config, model: offline.model }, options);
    return { ...palaver, close: (closeOptions) => palaver.close(closeOptions).finally(() => offline.close()) };
  } catch (error) {
    await offline.close();
    throw error;
  }
}

/** Builds a Palaver from a validated config whose models are endpoints. */
async function assemble(config: PalaverConfig, options: PalaverOptions): Promise<Palaver> {
  // What model, MCP and Telegram calls go out with. Made now, so that an outgoing proxy the environment names wrongly
  // stops the start (its connections open on first use).
  const http = createOutgoingHttp({ proxy: proxySettingsFromEnv() });
  const callsOut = { fetch: http.fetch };
  // Every line passes one redaction step that knows the config's secrets, also on a logger passed in.
  const secrets = new Set(secretsOf(config));
  const logger = options.logger ? withSecretScrubbing(options.logger, secrets) : createLogger({ level: config.log.level, format: config.log.format, secrets });
  const metrics = new PalaverMetrics({ defaultMetrics: options.processMetrics ?? false, channels: channelPlugins });
  const instructions = loadInstructionLibrary(config.agent.instructionsDir);
  const { createModelSet } = await import('./models/create-model-set.js');
  const models = createModelSet(config.model, callsOut);
  const agentFlow = await configuredFlow(config, callsOut);
  const moduleTools = config.agent.toolsModule ? await loadToolsModule(config.agent.toolsModule) : [];
  const { openStore } = await import('./store/open-store.js');
  const store = await openStore(config.database.url);
  // `streams`: tools run on `palaver worker` processes; the runtime offers what live workers serve and builds no
  // local or MCP hosts (hosted MCP stays: the model provider calls it). The role, focus and limit checks stay here.
  const streams =
    config.tools.dispatch === 'streams'
      ? await startStreamsToolsOrClose(config, store, logger, metrics, await approvalRules(config, [...moduleTools, ...(options.tools ?? [])]))
      : undefined;
  const { hosts, hostedMcp } = await createToolHosts(
    config,
    models.primary,
    streams ? [] : [...moduleTools, ...(options.tools ?? [])],
    logger,
    streams !== undefined,
    http.fetch,
  ).catch(async (error: unknown) => {
    await streams?.dispatcher.close();
    await store.close();
    throw error;
  });
  const policy = { roles: config.roles.definitions, withoutRole: config.roles.withoutRole };
  const tools = streams ? new ToolRegistry([streams.catalogue], policy) : new ToolRegistry([...hosts, ...(options.toolHosts ?? [])], policy);
  const dispatcher: ToolDispatcher = streams ? streams.dispatcher : new InlineToolDispatcher(tools);
  const identity: IdentityResolver =
    config.identity.resolver.kind === 'mcp'
      ? await directoryResolver(config.identity.resolver, config.identity, store, logger, http.fetch)
      : new LocalIdentityResolver(store, { phones: config.identity.phones });
  const { defaultRegion, fromText } = config.identity.phones;

  const profiles = profileCodec(profileDefaultsFrom(config));
  const cache = new ConversationCache({ maxEntries: Math.max(1, config.cache.maxEntries), ttlMs: config.cache.ttlMs, historyLimit: config.agent.historyLimit });
  // Notifications between the processes on this database (cluster.bus); each cache forgets what another one changed.
  const { openClusterBus } = await import('./cluster/open-bus.js');
  const cluster = await openClusterBus(config, cache, logger).catch(async (error: unknown) => {
    await streams?.dispatcher.close();
    await identity.close?.();
    await store.close();
    throw error;
  });
  const billing = createBilling(config, logger);
  const now = options.now ?? (() => new Date());
  // Tells operators of conversations waiting for a person (`operators.notify`). Made once the channels run, since
  // the Telegram way posts through the bot; a turn that opens a handoff calls its `notify` (the rest come by timer).
  let handoffNotices: HandoffNotifier | undefined;
  const pipeline = new Pipeline(
    {
      store,
      models,
      namedModels: await withClassifierModels(config, agentFlow.namedModels, callsOut),
      flow:
        config.focus.stages.length === 0
          ? agentFlow.flow
          : withFocus(agentFlow.flow, focusSettings(config.focus, [...moduleTools, ...(options.tools ?? [])]), store.focus, {
              onLoadFailed: (entity) => metrics.focusLoadFailures.inc({ entity }),
              ...(options.observer?.focus ? { onLoaded: options.observer.focus.bind(options.observer) } : {}),
            }),
      tools,
      // Cross-cutting work around every model and tool call, in one place; the first wrapper is the outermost.
      // Model output and tool results are made storable innermost, before any other wrapper or the turn sees them.
      invokeModel: composeCalls(
        [
          logModelFailures(logger),
          countModelCalls(metrics),
          limitModelCalls(pLimit(config.limits.maxConcurrentModelCalls)),
          timeModelCalls(metrics),
          ...(options.observer
            ? [
                observeModelCalls(options.observer, ({ model, usage, responseId }) =>
                  billing.usdCostOf({ model, usage, responseId, fallback: false, path: 'observed' }, now()),
                ),
              ]
            : []),
          storableModelOutput(config.tools.maxResultChars),
        ],
        ({ provider, request }) => provider.complete(request),
      ),
      dispatchTool: composeCalls(
        [
          logToolCalls(logger),
          countToolCalls(metrics),
          ...(options.observer ? [observeToolCalls(options.observer)] : []),
          storableToolResults(config.tools.maxResultChars),
        ],
        ({ request, signal }) => dispatcher.dispatch(request, signal ? { signal } : {}),
      ),
      dispatchRecordsCalls: dispatcher.recordsCalls === true,
      hostedMcp,
      instructions,
      agent: {
        defaultRole: config.agent.defaultRole,
        historyLimit: config.agent.historyLimit,
        historyTokenLimit: config.agent.historyTokenLimit,
        historyTimes: config.agent.historyTimes,
        maxToolRounds: config.agent.maxToolRounds,
        maxReplyChars: config.agent.maxReplyChars,
        maxToolCallsPerTurn: config.agent.maxToolCallsPerTurn,
        maxCallsPerTool: config.agent.maxCallsPerTool,
        defaultTimeZone: config.agent.timezone,
        defaultLanguage: config.agent.language,
        setRoleTool: config.roles.setRoleTool,
        roleArgument: config.roles.roleArgument,
        resetTriggers: resetTriggerSet(config.reset.triggers),
        resetKeepsRole: config.reset.keepRole,
        approvalTimeoutMs: config.tools.approvalTimeoutMinutes * 60_000,
        handoff: {
          tool: config.agent.tools.includes('handoff'),
          phrases: handoffPhraseSet(config.operators.handoff.phrases),
          ...(config.operators.hours ? { hours: config.operators.hours } : {}),
        },
      },
      replies: replySettings(config),
      profiles,
      billing,
      budgets: budgetSettings(config),
      cache,
      logger,
      metrics,
      now,
      // Operators are told at once (the notifier's timer would find the handoff within seconds anyway).
      onHandoff: (handoff) => {
        logger.info(
          { handoffId: handoff.id, sessionId: handoff.sessionId, source: handoff.source },
          'conversation handed to a person, waiting for an operator',
        );
        void handoffNotices?.notify(handoff);
      },
      summaries: conversationSummaries(config, models, createModelSet, callsOut),
    },
    identity,
    {
      maxInboundChars: config.limits.maxInboundChars,
      leaseMs: config.inbox.leaseMs,
      heartbeatMs: config.cluster.heartbeatMs,
      maxTurnAttempts: config.inbox.maxTurnAttempts,
      maxConcurrentTurns: config.limits.maxConcurrentTurns,
      limitAccepts: pLimit(config.limits.maxConcurrentAccepts),
      perPerson: config.limits.perPerson,
      ...(fromText ? { findPhoneInText: (text: string) => findPhoneInText(text, defaultRegion) } : {}),
    },
  );

  // `chat()` is a channel like any other: its messages take the same road.
  const api = new MemoryChannel({ name: 'api', record: false });
  const configured = await configuredChannels({
    config,
    logger,
    metrics,
    store,
    // A bus only this process hears relays nothing (a run and its turn always meet in this process).
    bus: options.bus ?? (cluster.shared ? cluster.bus : undefined),
    onSecret: (secret) => secrets.add(secret),
    transcriber: (settings) => lazyTranscriber(settings, config),
    fetch: http.fetch,
    overrides: options.telegramUserNetwork ? { [TELEGRAM_USER_CHANNEL]: options.telegramUserNetwork } : {},
  });
  const channels: Channel[] = [api, ...configured.channels, ...(options.channels ?? [])];
  const names = new Set<string>();
  for (const channel of channels) {
    if (names.has(channel.name))
      throw new ConfigError(`Two channels are named "${channel.name}"; channel names must be unique`, [{ path: 'channels', message: 'duplicate name' }]);
    names.add(channel.name);
  }
  const started: Channel[] = [];
  try {
    for (const channel of channels) {
      await channel.start(pipeline.contextFor(channel));
      started.push(channel);
    }
  } catch (error) {
    await Promise.allSettled(started.map((channel) => channel.stop()));
    await streams?.dispatcher.close();
    await identity.close?.();
    await cluster.close();
    await store.close();
    throw error;
  }
  // Now that every channel can deliver: answer what a stopped process left unanswered, and keep our leases alive.
  if (options.serveInbox !== false) pipeline.start();
  // Not in a Palaver that serves no inbox (`palaver telegram sync`): it is no place to tell operators from.
  if (options.serveInbox !== false) {
    handoffNotices = configuredHandoffNotifier(config.operators, {
      store,
      telegram: operatorsChatOf(channels),
      fetch: http.fetch,
      logger,
      metrics,
      now: () => now().getTime(),
    });
    handoffNotices?.start();
  }

  let closing: Promise<void> | undefined;
  async function checkHealth(): Promise<Record<string, { ok: boolean; detail?: string }>> {
    const checks: Record<string, { ok: boolean; detail?: string }> = {};
    try {
      await store.ping();
      checks.database = { ok: true };
    } catch (error) {
      checks.database = { ok: false, detail: error instanceof Error ? error.message : String(error) };
    }
    if (streams) checks.redis = await streams.health();
    for (const [name, check] of Object.entries(configured.healthChecks)) checks[name] = check();
    return checks;
  }

  const profileService = new ProfileService(store, profiles, cache);
  // The admin API names accounts by namespace; a channel's name that has its own namespace is taken for it.
  const accountNamespaces = new Map(
    channels.flatMap((channel) => (channel.accountNamespace === undefined ? [] : [[channel.name, channel.accountNamespace] as const])),
  );
  const admin = new IdentityAdmin({
    store,
    profiles: profileService,
    cache,
    roleNames: Object.keys(config.roles.definitions),
    defaultRegion,
    accountNamespaces,
  });
  const operators = new OperatorActions({ store, pipeline, cache, resetKeepsRole: config.reset.keepRole, logger, metrics, now });
  const operatorAccounts = new OperatorAccounts({ store });
  /** The HTTP app of `serve`: the channels' routes, health, metrics and the admin API. */
  async function httpApp(appOptions: { host?: string } = {}): Promise<Hono> {
    const { createHttpApp, apiKeyAuth } = await import('./server/index.js');
    const { adminRoutes } = await import('./server/admin-routes.js');
    const { clientAddressResolver } = await import('./platform/client-address.js');
    const { conversationChangeProbe } = await import('./admin/conversation-change-probe.js');
    const { operatorReadRoutes } = await import('./server/admin/operator-routes.js');
    const { actionRoutes } = await import('./server/admin/action-routes.js');
    const { operatorAccountRoutes } = await import('./server/admin/operator-account-routes.js');
    const { approvalsRoutes } = await import('./server/admin/approvals-routes.js');
    const host = appOptions.host ?? config.server.host;
    return createHttpApp({
      health: checkHealth,
      apiKey: config.server.apiKey,
      adminToken: config.server.adminToken,
      operators: operatorAccounts,
      logger,
      routes: channels.flatMap((channel) => channel.routes ?? []),
      hosts: {
        allowedHosts: [...config.server.allowedHosts, ...channelPlugins.flatMap((plugin) => plugin.allowedHosts?.(sliceOf(config.channels, plugin)) ?? [])],
        serverHost: host,
      },
      trustedProxies: config.server.trustedProxies,
      dashboard: {
        events: conversationChangeProbe(store.operators, { handoffs: store.handoffs, approvals: store.approvals }),
        metrics: metrics.registry,
        sessionStore: store.dashboardSessions,
      },
      extraRoutes: (http) => {
        http.route('/admin', adminRoutes(admin, clientAddressResolver(config.server.trustedProxies)));
        // With streams dispatch the overview also shows the tool stream's backlog and dead letters.
        http.route(
          '/admin',
          operatorReadRoutes({ queries: store.operators, handoffs: store.handoffs, ...(streams ? { toolStream: () => streams.backlog() } : {}) }),
        );
        http.route('/admin', actionRoutes(operators));
        http.route(
          '/admin',
          approvalsRoutes({ approvals: store.approvals, decide: (id, decision, actor, options) => pipeline.approvals.decide(id, decision, actor, options) }),
        );
        http.route('/admin', operatorAccountRoutes(operatorAccounts));
        http.use('/metrics', apiKeyAuth({ apiKey: config.server.apiKey }));
        http.get('/metrics', async (c) => c.text(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType }));
      },
    });
  }
  return {
    config,
    store,
    metrics,
    logger,
    tools,
    channels,
    profiles: profileService,
    admin,
    operators,
    approvals: pipeline.approvals,
    async chat({ userId, text, conversationId }) {
      const said = await api.say(text, { accountId: userId, conversationId: conversationId ?? userId });
      if (said.status === 'duplicate') {
        return {
          text: '',
          parts: [],
          status: 'duplicate',
          sessionId: '',
          correlationId: said.correlationId,
          usage: { inputTokens: 0, outputTokens: 0, cost: '0', currency: config.billing.defaultCurrency },
        };
      }
      const { outcome, parts } = await api.reply(said);
      return {
        text: outcome.reply,
        parts,
        status: outcome.status,
        ...(outcome.errorId === undefined ? {} : { errorId: outcome.errorId }),
        sessionId: outcome.sessionId,
        correlationId: outcome.correlationId,
        usage: outcome.usage,
      };
    },
    async diagnose() {
      const missingFiles = Object.keys(config.roles.definitions)
        .filter((role) => !instructions.roles.has(role))
        .map((role) => `role ${role} has no instructions file ${role}.md in ${config.agent.instructionsDir}`);
      // A hosted server names its tools to the model provider only: its allowedTools, or any name when it has none.
      const hostedMayOffer = (tool: string) => hostedMcp.some((spec) => spec.allowedTools === undefined || spec.allowedTools.includes(tool));
      const { telegramChatId } = config.operators.notify;
      const noBot =
        telegramChatId !== undefined && operatorsChatOf(channels) === undefined
          ? [`operators.notify.telegramChatId is set, but the Telegram bot (channels.telegram) does not run here: operators are not told in Telegram`]
          : [];
      return [...missingFiles, ...noBot, ...(await tools.diagnose(hostedMayOffer))];
    },
    async serve(serveOptions = {}) {
      const { startHttpServer } = await import('./server/index.js');
      const host = serveOptions.host ?? config.server.host;
      return startHttpServer(await httpApp({ host }), { host, port: serveOptions.port ?? config.server.port });
    },
    httpApp,
    health: checkHealth,
    close(closeOptions = {}) {
      closing ??= (async () => {
        const graceMs = closeOptions.graceMs ?? config.server.shutdownGraceMs;
        const deadline = Date.now() + graceMs;
        // Notices under way are cut short (the next round, on this or another process, tells operators again).
        await handoffNotices?.close();
        // No new messages first; then accepted ones are answered, as far as the grace period allows. Both are
        // bounded: a channel may be finishing a call to an API that does not answer, a turn may wait on a model.
        const stopped = await settlesWithin(Promise.allSettled(channels.map((channel) => channel.stop())), graceMs);
        const drained = await pipeline.close({ graceMs: Math.max(0, deadline - Date.now()) });
        if (!stopped || !drained) {
          logger.warn({ graceMs }, 'shutdown grace period over: work still running is left to the next start (its messages stay leased and are answered once)');
        }
        await dispatcher.close();
        await identity.close?.();
        await cluster.close();
        await store.close();
        // Model, MCP and Telegram calls are over: their idle pooled connections close now, one still busy (a call
        // past the grace period) once it is answered.
        await settlesWithin(http.close(), Math.max(0, deadline - Date.now()));
      })();
      return closing;
    },
  };
}

/** The team's directory as the identity step (`identity.resolver.kind: "mcp"`); the MCP SDK loads on its first lookup. */
async function directoryResolver(
  settings: Extract<PalaverConfig['identity']['resolver'], { kind: 'mcp' }>,
  identity: PalaverConfig['identity'],
  store: Store,
  logger: Logger,
  fetch: typeof globalThis.fetch,
): Promise<IdentityResolver> {
  const phoneRegion = identity.phones.defaultRegion;
  const { McpIdentityResolver } = await import('./identity/mcp-identity.js');
  return new McpIdentityResolver(store, {
    url: settings.url,
    tool: settings.tool,
    ...(settings.bearerToken === undefined ? {} : { bearerToken: settings.bearerToken }),
    ...(settings.headers === undefined ? {} : { headers: settings.headers }),
    timeoutMs: settings.timeoutMs,
    cacheSize: settings.cacheSize,
    cacheTtlSeconds: settings.cacheTtlSeconds,
    onUnreachable: identity.onUnreachable,
    ...(phoneRegion === undefined ? {} : { phoneRegion }),
    logger,
    fetch,
  });
}

/**
 * Speech to text for a channel (the Telegram ones): the model's endpoint (and key) unless `settings` names another endpoint.
 * The transcriber (and the openai SDK under it) loads with the first voice message, not at start-up.
 */
function lazyTranscriber(settings: TranscriptionSettings, config: PalaverConfig): Transcriber['transcribe'] {
  const apiKey = settings.apiKey ?? (settings.baseUrl === undefined ? config.model.apiKey : undefined);
  let transcriber: Promise<Transcriber> | undefined;
  return async (audio, options) => {
    transcriber ??= import('./models/openai-transcription.js').then(({ createTranscriber }) =>
      createTranscriber({
        baseUrl: settings.baseUrl ?? config.model.baseUrl ?? 'https://api.openai.com/v1',
        model: settings.model,
        ...(apiKey === undefined ? {} : { apiKey }),
      }),
    );
    return (await transcriber).transcribe(audio, options);
  };
}

async function startStreamsToolsOrClose(
  config: PalaverConfig,
  store: Store,
  logger: Logger,
  metrics: PalaverMetrics,
  approvals: ReadonlyMap<string, Pick<ToolDescriptor, 'approval' | 'describe'>>,
) {
  const { startStreamsTools } = await import('./queue/streams-tools.js');
  try {
    return await startStreamsTools(config, store, logger, metrics, approvals);
  } catch (error) {
    await store.close();
    throw error;
  }
}

/**
 * Who approves which tool, as this runtime's config and tools module say (`defineTool({ approval })`,
 * `mcp.servers[].approval`): with streams dispatch the tools run on workers, but the approval is asked here.
 */
async function approvalRules(config: PalaverConfig, localTools: readonly LocalTool[]): Promise<Map<string, Pick<ToolDescriptor, 'approval' | 'describe'>>> {
  const rules = new Map<string, Pick<ToolDescriptor, 'approval' | 'describe'>>();
  for (const server of config.mcp.servers) {
    const by = server.approval?.by;
    if (by !== undefined) for (const tool of server.approval!.tools) rules.set(tool, { approval: () => by });
  }
  if (localTools.length > 0) {
    const { approvalOf } = await import('./tools/local-tool-host.js');
    for (const tool of localTools) if (tool.approval !== undefined) rules.set(tool.name, approvalOf(tool));
  }
  return rules;
}

/** Prices and currencies from config: `model.prices` win over the price table, which loads on its first use. */
function createBilling(config: PalaverConfig, logger: Logger): Billing {
  const { billing } = config;
  return new Billing(
    {
      overrides: config.model.prices,
      table: billing.priceTable ? genaiPriceLookup() : undefined,
      currencyByCountry: billing.currencyByCountry,
      defaultCurrency: billing.defaultCurrency,
      defaultCountry: billing.defaultCountry ?? null,
      usdRates: billing.usdRates,
    },
    logger,
  );
}

/**
 * How the agent answers on each channel: `agent.replies`, overridden by a channel's own `replies`. A channel without
 * a config entry (the console, `chat()`, one passed in) answers as the agent does.
 */
function replySettings(config: PalaverConfig): ReplySettings {
  const channels = new Map(
    channelPlugins.flatMap((plugin) => {
      const mode = sliceOf(config.channels, plugin).replies;
      return mode === undefined ? [] : [[plugin.name, mode] as const];
    }),
  );
  return { mode: config.agent.replies, channels, actions: config.agent.actions };
}

/**
 * Under a budget every model call needs a ceiling on what it writes, or its cost could not be reserved: the models
 * that set no `maxOutputTokens` get {@link BUDGETED_MAX_OUTPUT_TOKENS}, sent to their endpoint (stage models and the
 * fallback inherit it from `model`).
 */
function withBudgetedOutput(config: PalaverConfig): PalaverConfig {
  const { perUserPerDay, perSession } = config.budgets;
  if ((perUserPerDay === undefined && perSession === undefined) || config.model.maxOutputTokens !== undefined) return config;
  return { ...config, model: { ...config.model, maxOutputTokens: BUDGETED_MAX_OUTPUT_TOKENS } };
}

/** The spend caps, or undefined when none is set (then a turn reads nothing for them). */
function budgetSettings(config: PalaverConfig): BudgetSettings | undefined {
  const { perUserPerDay, perSession, reservePerTurn, currency } = config.budgets;
  if (perUserPerDay === undefined && perSession === undefined) return undefined;
  return {
    ...(perUserPerDay === undefined ? {} : { perUserPerDay }),
    ...(perSession === undefined ? {} : { perSession }),
    ...(reservePerTurn === undefined ? {} : { reservePerTurn }),
    currency: currency ?? config.billing.defaultCurrency,
  };
}
