import type { ModelCall, ModelCallRecord } from '../../domain/ports/flow.js';
import type {
  HostedMcpSpec,
  HostedToolCall,
  ModelInputItem,
  ModelRequest,
  ModelToolCall,
  ModelToolSpec,
  StructuredOutputSpec,
} from '../../domain/ports/model-provider.js';

/** What a tool call gave the model: its text, and whether it failed. */
export interface ToolResult {
  readonly content: string;
  readonly isError: boolean;
}

export interface ExecutedToolCall extends ModelToolCall {
  readonly result: ToolResult;
  readonly refused: boolean;
}

export interface AgentLoopOptions {
  readonly instructions: string;
  /** Everything the model should see when no chain is used: history and the new message(s). */
  readonly transcript: readonly ModelInputItem[];
  /** Only the new message(s): what a chained call sends after `previousResponseId`. */
  readonly newItems: readonly ModelInputItem[];
  readonly previousResponseId: string | undefined;
  readonly tools: readonly ModelToolSpec[];
  /** MCP servers the provider calls itself (Responses API). */
  readonly hostedMcp?: readonly HostedMcpSpec[];
  readonly maxRounds: number;
  readonly maxToolCalls: number;
  readonly maxCallsPerTool: number;
  /**
   * Makes one model call, applying the fallback and chain policy. `transcript` is the full conversation so far,
   * for a retry that must drop the chain.
   */
  callModel(request: ModelRequest, transcript: readonly ModelInputItem[]): Promise<ModelCall>;
  /** Runs one tool call (validation, role policy, user binding, effects, progress). */
  runTool(call: ModelToolCall): Promise<ToolResult>;
  /** Checked after each round of tool calls; true ends the loop early (a role change re-runs the turn; a handoff ends it). */
  shouldStop(): boolean;
  /** Told about the MCP calls the provider made itself in each response, before its tool calls run. */
  onHostedCalls?(calls: readonly HostedToolCall[]): void;
  /** Reported when a limit refuses a call, for metrics and logs. */
  onLimit?(kind: 'tool_rounds' | 'tool_calls_per_turn' | 'calls_per_tool', tool?: string): void;
  readonly onTextDelta?: (delta: string) => void;
  /** The final answer must be JSON matching this schema (a staged flow's execution stage). */
  readonly output?: StructuredOutputSpec;
  readonly signal?: AbortSignal;
  readonly correlationId: string;
}

export interface AgentLoopResult {
  readonly text: string;
  readonly modelCalls: readonly ModelCallRecord[];
  readonly toolCalls: readonly ExecutedToolCall[];
  /** MCP calls the provider made itself, read back from its responses. */
  readonly hostedToolCalls: readonly HostedToolCall[];
  /** The last response id, for the next turn's chain. */
  readonly responseId: string | undefined;
  readonly stopped: boolean;
  /** The conversation as the loop left it: the given transcript, then each round's tool calls and results. */
  readonly transcript: readonly ModelInputItem[];
}

const ROUNDS_EXHAUSTED_NOTE = 'You have used every tool round allowed for this turn. Do not call tools now: answer the person with what you already know.';

/**
 * The single agent loop: call the model, run the tool calls it asks for, feed the results back, until it
 * answers in text. Bounded by rounds and by tool-call limits; each refusal is explained to the model.
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopResult> {
  const transcript: ModelInputItem[] = [...options.transcript];
  const modelCalls: ModelCallRecord[] = [];
  const toolCalls: ExecutedToolCall[] = [];
  const hostedToolCalls: HostedToolCall[] = [];
  const callsPerTool = new Map<string, number>();
  let chainId = options.previousResponseId;
  let pending: ModelInputItem[] = [...options.newItems];

  for (let round = 0; ; round++) {
    const exhausted = round >= options.maxRounds;
    if (exhausted) options.onLimit?.('tool_rounds');
    const { response, record } = await options.callModel(
      {
        instructions: exhausted ? `${options.instructions}\n\n${ROUNDS_EXHAUSTED_NOTE}` : options.instructions,
        input: chainId ? pending : transcript,
        tools: exhausted ? [] : options.tools,
        ...(options.hostedMcp?.length && !exhausted ? { hostedMcp: options.hostedMcp } : {}),
        ...(chainId ? { previousResponseId: chainId } : {}),
        ...(options.onTextDelta ? { onTextDelta: options.onTextDelta } : {}),
        ...(options.output ? { output: options.output } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        correlationId: options.correlationId,
      },
      transcript,
    );
    modelCalls.push(record);
    if (response.hostedToolCalls?.length) {
      hostedToolCalls.push(...response.hostedToolCalls);
      options.onHostedCalls?.(response.hostedToolCalls);
    }
    // A fallback or chain retry answers without a chain; from then on the full transcript is sent.
    chainId = response.responseId;
    if (response.toolCalls.length === 0 || exhausted) {
      return { text: response.text, modelCalls, toolCalls, hostedToolCalls, responseId: response.responseId, stopped: false, transcript };
    }

    pending = [];
    for (const call of response.toolCalls) {
      const refusal = limitRefusal(call.name, toolCalls.length, callsPerTool, options);
      const result = refusal ?? (await options.runTool(call));
      if (!refusal) callsPerTool.set(call.name, (callsPerTool.get(call.name) ?? 0) + 1);
      toolCalls.push({ ...call, result, refused: refusal !== undefined });
      const items: ModelInputItem[] = [
        { type: 'tool_call', callId: call.callId, name: call.name, arguments: call.arguments },
        { type: 'tool_result', callId: call.callId, output: result.isError ? `Error: ${result.content}` : result.content },
      ];
      transcript.push(...items);
      pending.push(items[1]!);
    }
    if (options.shouldStop()) return { text: response.text, modelCalls, toolCalls, hostedToolCalls, responseId: chainId, stopped: true, transcript };
  }
}

function limitRefusal(name: string, callsSoFar: number, perTool: ReadonlyMap<string, number>, options: AgentLoopOptions): ToolResult | undefined {
  if (callsSoFar >= options.maxToolCalls) {
    options.onLimit?.('tool_calls_per_turn', name);
    return { content: `Limit reached: at most ${options.maxToolCalls} tool calls per turn. ${name} was not run; answer with what you have.`, isError: true };
  }
  if ((perTool.get(name) ?? 0) >= options.maxCallsPerTool) {
    options.onLimit?.('calls_per_tool', name);
    return {
      content: `Limit reached: ${name} may run at most ${options.maxCallsPerTool} times per turn. It was not run again; answer with what you have.`,
      isError: true,
    };
  }
  return undefined;
}
