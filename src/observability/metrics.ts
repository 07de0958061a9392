import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import { MoneyDecimal } from '../domain/money.js';

// prom-client (CommonJS, about 4 MB of heap and 30 ms to load) is required when the first PalaverMetrics is made,
// so that importing the package entry (which exports this class) does not load it. In dist the require points at a
// one-file bundle of it (scripts/build.mjs).
const require = createRequire(import.meta.url);

/**
 * What makes a channel's own metrics on a registry, by channel name: each channel plug-in fits it. The composition
 * root hands the plug-ins over, so that the metrics need not know the channels.
 */
export interface ChannelMetricsSource<Metrics = unknown> {
  readonly name: string;
  readonly metrics?: ((prom: typeof PromClient, registry: PromClient.Registry) => Metrics) | undefined;
}

/**
 * Prometheus metrics of one Palaver instance. Each instance has its own registry, so two instances in one
 * process (tests, embedding) never collide.
 */
export class PalaverMetrics {
  readonly registry: PromClient.Registry;
  readonly turns: PromClient.Counter<'status'>;
  readonly turnSeconds: PromClient.Histogram<string>;
  readonly modelCalls: PromClient.Counter<'model' | 'path'>;
  readonly modelFailures: PromClient.Counter<'path'>;
  /**
   * Tokens of answered model calls, by the model that answered and `kind`: `input` (every input token, cached ones
   * included), `cached` (the input tokens read from the provider's prompt cache) and `output`.
   */
  readonly tokens: PromClient.Counter<'model' | 'kind'>;
  /** Model call latency (the call itself, not the wait for a concurrency slot), by configured model and outcome. */
  readonly modelCallSeconds: PromClient.Histogram<'model' | 'outcome'>;
  /**
   * What stored turns cost, by billing currency. The sum is kept as an exact decimal and exported as the nearest
   * float, so the scraped value reads like the stored amounts (0.00555, not 0.0055500000000000005).
   */
  readonly cost: PromClient.Counter<'currency'>;
  readonly toolCalls: PromClient.Counter<'tool' | 'outcome'>;
  /** Tool call latency as the runtime sees it (dispatch included), by tool and outcome. */
  readonly toolCallSeconds: PromClient.Histogram<'tool' | 'outcome'>;
  /** Messages this process accepted and has not answered yet (waiting for a turn or in a running one). */
  readonly inboxWaiting: PromClient.Gauge<string>;
  readonly toolLimits: PromClient.Counter<'limit'>;
  readonly duplicates: PromClient.Counter<string>;
  /** Messages a per-person rate limit stopped (`limits.perPerson`), by channel. */
  readonly rateLimited: PromClient.Counter<string>;
  /** Runs that wrote (or tried to write) a conversation's summary (`agent.memory.summarize`), by outcome. */
  readonly summaries: PromClient.Counter<'outcome'>;
  readonly deadLetters: PromClient.Counter<'channel' | 'reason'>;
  /** Inbound messages given up on after `inbox.maxTurnAttempts` turns failed to store an answer. */
  readonly turnsAbandoned: PromClient.Counter<string>;
  readonly turnsFencedOut: PromClient.Counter<string>;
  readonly toolApprovals: PromClient.Counter<'decision'>;
  /** Model replies cut to `agent.maxReplyChars`. */
  readonly repliesCut: PromClient.Counter<string>;
  /** Model answers in actions mode refused by the plan check (nothing of them sent), by reason; repairs count too. */
  readonly replyActionsInvalid: PromClient.Counter<'reason'>;
  /** Reply parts left in the outbox because the channel asked to wait (a flood wait), or queued behind such parts. */
  readonly replyPartsPostponed: PromClient.Counter<'channel'>;
  /** Messages stored without a turn (`ChannelContext.record`), new ones only, by channel and source. */
  readonly recordedMessages: PromClient.Counter<'channel' | 'source'>;
  /** Entities in focus a stage needed and could not load (their tool failed or timed out), by entity type; the turn went on without them. */
  readonly focusLoadFailures: PromClient.Counter<'entity'>;
  /**
   * Stored profiles a turn could not read, wholly (`part="whole"`: the defaults stood in for all of it) or in some
   * fields (`part="fields"`: the defaults stood in for those). Counted when a turn reads the row from the store (once
   * per cache lifetime); the row is kept as it is.
   */
  readonly profileReadProblems: PromClient.Counter<'part'>;
  /**
   * Notices telling operators that a conversation waits for a person, by way (`webhook`, `telegram`) and outcome
   * (`sent`, `failed`). A failed one is not retried: the handoff's next round tells them again.
   */
  readonly handoffNotices: PromClient.Counter<'via' | 'outcome'>;
  /** Each channel plug-in's own metrics, by channel name (see `channel`). */
  readonly #channels = new Map<string, unknown>();
  readonly #inboxSources = new Set<() => number>();
  readonly #costs = new Map<string, InstanceType<typeof MoneyDecimal>>();

  constructor(options: { defaultMetrics?: boolean; channels?: readonly ChannelMetricsSource[] } = {}) {
    const prom = require('prom-client') as typeof PromClient;
    const registry = (this.registry = new prom.Registry());
    this.turns = new prom.Counter({ name: 'palaver_turns_total', help: 'Turns run, by outcome', labelNames: ['status'] as const, registers: [registry] });
    this.turnSeconds = new prom.Histogram({
      name: 'palaver_turn_seconds',
      help: 'Turn duration',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    });
    this.modelCalls = new prom.Counter({
      name: 'palaver_model_calls_total',
      help: 'Model calls, by model and path',
      labelNames: ['model', 'path'] as const,
      registers: [registry],
    });
    this.modelFailures = new prom.Counter({
      name: 'palaver_model_failures_total',
      help: 'Failed model calls, by path',
      labelNames: ['path'] as const,
      registers: [registry],
    });
    this.tokens = new prom.Counter({
      name: 'palaver_tokens_total',
      help: 'Tokens of answered model calls, by model and kind (input includes cached)',
      labelNames: ['model', 'kind'] as const,
      registers: [registry],
    });
    this.modelCallSeconds = new prom.Histogram({
      name: 'palaver_model_call_seconds',
      help: 'Model call duration, by model and outcome (ok, unreachable, refused, stale_chain, invalid_output, error)',
      labelNames: ['model', 'outcome'] as const,
      buckets: [0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120],
      registers: [registry],
    });
    const costs = this.#costs;
    this.cost = new prom.Counter({
      name: 'palaver_cost_total',
      help: 'Cost of stored turns, by billing currency',
      labelNames: ['currency'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [currency, total] of costs) this.inc({ currency }, total.toNumber());
      },
    });
    this.toolCalls = new prom.Counter({
      name: 'palaver_tool_calls_total',
      help: 'Tool calls, by tool and outcome',
      labelNames: ['tool', 'outcome'] as const,
      registers: [registry],
    });
    this.toolCallSeconds = new prom.Histogram({
      name: 'palaver_tool_call_seconds',
      help: 'Tool call duration as the runtime sees it, by tool and outcome (ok, error, failed)',
      labelNames: ['tool', 'outcome'] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
    const inboxSources = this.#inboxSources;
    this.inboxWaiting = new prom.Gauge({
      name: 'palaver_inbox_waiting',
      help: 'Messages this process accepted and has not answered yet (waiting for a turn or in a running one)',
      registers: [registry],
      collect() {
        let total = 0;
        for (const source of inboxSources) total += source();
        this.set(total);
      },
    });
    this.toolLimits = new prom.Counter({
      name: 'palaver_tool_limit_hits_total',
      help: 'Tool calls refused or loops ended by a limit',
      labelNames: ['limit'] as const,
      registers: [registry],
    });
    this.duplicates = new prom.Counter({ name: 'palaver_inbound_duplicates_total', help: 'Redelivered inbound messages ignored', registers: [registry] });
    this.rateLimited = new prom.Counter({
      name: 'palaver_rate_limited_total',
      help: 'Messages stored but not answered by the model because their person passed limits.perPerson, by channel',
      labelNames: ['channel'] as const,
      registers: [registry],
    });
    this.summaries = new prom.Counter({
      name: 'palaver_summaries_total',
      help: 'Conversation summary runs by outcome: written, failed (retried after the next turn), over_budget, busy (another process writes it), taken_over (its claim ran out first)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    });
    this.deadLetters = new prom.Counter({
      name: 'palaver_channel_dead_letters_total',
      help: 'Inbound updates a channel gave up on (kept as dead letters), by reason',
      labelNames: ['channel', 'reason'] as const,
      registers: [registry],
    });
    this.toolApprovals = new prom.Counter({
      name: 'palaver_tool_approvals_total',
      help: 'Tool call approval requests decided, by decision (approved, declined, expired)',
      labelNames: ['decision'] as const,
      registers: [registry],
    });
    this.turnsFencedOut = new prom.Counter({
      name: 'palaver_turns_fenced_out_total',
      help: 'Turns stopped because another process took their conversation over while they ran (this process was paused or cut off); they stored and sent nothing',
      registers: [registry],
    });
    this.turnsAbandoned = new prom.Counter({
      name: 'palaver_turns_abandoned_total',
      help: 'Inbound messages answered with an apology (or dropped) after their turns failed inbox.maxTurnAttempts times',
      registers: [registry],
    });
    this.repliesCut = new prom.Counter({ name: 'palaver_replies_cut_total', help: 'Model replies cut to agent.maxReplyChars', registers: [registry] });
    this.replyActionsInvalid = new prom.Counter({
      name: 'palaver_reply_actions_invalid_total',
      help: 'Model answers refused as reply actions (invalid JSON, unknown action, a limit, an invented message id), by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    });
    this.replyPartsPostponed = new prom.Counter({
      name: 'palaver_reply_parts_postponed_total',
      help: 'Reply parts kept in the outbox to be sent later because the channel asked to wait, by channel',
      labelNames: ['channel'] as const,
      registers: [registry],
    });
    this.recordedMessages = new prom.Counter({
      name: 'palaver_recorded_messages_total',
      help: "Messages stored without a turn (history import, the owner's own words), by channel and source",
      labelNames: ['channel', 'source'] as const,
      registers: [registry],
    });
    this.focusLoadFailures = new prom.Counter({
      name: 'palaver_focus_load_failures_total',
      help: 'Entities in focus a stage needed and could not load (the tool failed or timed out), by entity type; the turn went on without them',
      labelNames: ['entity'] as const,
      registers: [registry],
    });
    this.profileReadProblems = new prom.Counter({
      name: 'palaver_profile_read_problems_total',
      help: 'Stored profiles a turn could not read, wholly (whole) or in some fields (fields), so the defaults stood in; the row is kept as it is',
      labelNames: ['part'] as const,
      registers: [registry],
    });
    this.handoffNotices = new prom.Counter({
      name: 'palaver_handoff_notices_total',
      help: 'Notices telling operators a conversation waits for a person, by way (webhook, telegram) and outcome (sent, failed)',
      labelNames: ['via', 'outcome'] as const,
      registers: [registry],
    });
    // Every channel's metrics, whether it runs or not: a dashboard sees its series at 0 rather than missing.
    for (const plugin of options.channels ?? []) if (plugin.metrics) this.#channels.set(plugin.name, plugin.metrics(prom, registry));
    if (options.defaultMetrics) prom.collectDefaultMetrics({ register: registry });
  }

  /** Adds a stored turn's cost (a decimal string) to `palaver_cost_total`; zero costs still show the currency. */
  addCost(currency: string, amount: string): void {
    this.#costs.set(currency, (this.#costs.get(currency) ?? new MoneyDecimal(0)).plus(amount));
  }

  /** Adds a count of messages waiting in an inbox to `palaver_inbox_waiting`; the returned function removes it. */
  watchInbox(source: () => number): () => void {
    this.#inboxSources.add(source);
    return () => this.#inboxSources.delete(source);
  }

  /** A channel plug-in's own metrics (what its `metrics` made on this registry; the plug-in must be among `channels`). */
  channel<Metrics>(plugin: ChannelMetricsSource<Metrics>): Metrics {
    return this.#channels.get(plugin.name) as Metrics;
  }
}
