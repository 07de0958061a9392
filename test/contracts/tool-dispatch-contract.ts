import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ToolCallRequest, ToolDispatcher } from '../../src/domain/ports/tool-dispatch.js';
import type { ToolCallContext } from '../../src/domain/ports/tool-host.js';
import { ToolRegistry } from '../../src/runtime/tools/tool-registry.js';
import { defineTool } from '../../src/tools/define-tool.js';
import { LocalToolHost } from '../../src/tools/local-tool-host.js';

/**
 * The contract every `ToolDispatcher` keeps, whether it runs calls in this process or on a worker behind a queue.
 * `create` gets a registry of tools (the hosts a worker would have) and returns a dispatcher running them.
 */
export function toolDispatcherContract(name: string, create: (registry: ToolRegistry) => Promise<ToolDispatcher> | ToolDispatcher): void {
  describe(`ToolDispatcher contract: ${name}`, () => {
    const seen: ToolCallContext[] = [];
    const tools = [
      defineTool({
        name: 'whoami',
        description: 'Tells who the call is for',
        input: z.object({}),
        run: (_args, ctx) => {
          seen.push(ctx);
          return { userId: ctx.userId, accounts: ctx.accounts, role: ctx.role, cart: ctx.getFlowState('cart') ?? null };
        },
      }),
      defineTool({
        name: 'become',
        description: 'Changes role and flow state',
        input: z.object({ role: z.string() }),
        run: ({ role }, ctx) => {
          ctx.setRole(role);
          ctx.setFlowState('cart', { items: 2 });
          ctx.setFlowState('wizard', undefined);
          return `now ${role}, cart ${JSON.stringify(ctx.getFlowState('cart'))}, wizard ${String(ctx.getFlowState('wizard'))}`;
        },
      }),
      defineTool({
        name: 'escalate',
        description: 'Hands the conversation to a person',
        input: z.object({ reason: z.string() }),
        run: ({ reason }, ctx) => {
          ctx.handoff({ reason });
          return 'a person will take over';
        },
      }),
      defineTool({ name: 'explode', description: 'Fails', input: z.object({}), run: () => Promise.reject(new Error('disk on fire')) }),
    ];
    const request = (overrides: Partial<ToolCallRequest> = {}): ToolCallRequest => ({
      callId: 'call-1',
      idempotencyKey: 'turn-1:call-1',
      tool: 'whoami',
      arguments: {},
      userId: 'user-7',
      accounts: [{ channel: 'web', accountId: 'visitor-7' }],
      sessionId: 'session-7',
      conversationId: 'thread-7',
      correlationId: 'corr-7',
      role: 'client',
      flowState: { cart: { items: 1 }, wizard: { step: 3 } },
      ...overrides,
    });
    const dispatcher = async () => create(new ToolRegistry([new LocalToolHost(tools)]));

    it('runs the tool for the user, accounts, role and flow state the request names, and nobody else', async () => {
      const result = await (await dispatcher()).dispatch(request());
      expect(result).toMatchObject({ callId: 'call-1', isError: false, effects: {} });
      expect(JSON.parse(result.content)).toEqual({
        userId: 'user-7',
        accounts: [{ channel: 'web', accountId: 'visitor-7' }],
        role: 'client',
        cart: { items: 1 },
      });
      expect(seen.at(-1)).toMatchObject({ sessionId: 'session-7', conversationId: 'thread-7', correlationId: 'corr-7', callId: 'call-1' });
    });

    it('takes requests and gives results that survive JSON (so a call can cross a process)', async () => {
      const sent = JSON.parse(JSON.stringify(request({ tool: 'become', arguments: { role: 'courier' }, callId: 'call-2' }))) as ToolCallRequest;
      const result = await (await dispatcher()).dispatch(sent);
      expect(JSON.parse(JSON.stringify(result))).toEqual(result);
      expect(result.durationMs).toBeGreaterThanOrEqual(0);
    });

    it('carries what the tool changed back as effects, not as closures: the role, set and cleared flow state', async () => {
      const result = await (await dispatcher()).dispatch(request({ tool: 'become', arguments: { role: 'courier' } }));
      expect(result.isError).toBe(false);
      expect(result.effects).toEqual({ role: 'courier', flowState: { cart: { items: 2 }, wizard: null } });
      // Within the call the tool reads its own writes.
      expect(result.content).toBe('now courier, cart {"items":2}, wizard undefined');
    });

    it('carries a handoff a tool asks for as an effect, its reason trimmed and cut to 500 characters; refuses one without a reason', async () => {
      const subject = await dispatcher();
      const asked = await subject.dispatch(request({ tool: 'escalate', arguments: { reason: '  wants a refund over the limit  ' } }));
      expect(asked).toMatchObject({ isError: false, content: 'a person will take over' });
      expect(asked.effects).toEqual({ handoff: { reason: 'wants a refund over the limit', source: 'tool' } });
      const long = await subject.dispatch(
        request({ callId: 'call-l', idempotencyKey: 'turn-1:call-l', tool: 'escalate', arguments: { reason: 'я'.repeat(600) } }),
      );
      expect(long.effects.handoff?.reason).toBe('я'.repeat(500));
      const empty = await subject.dispatch(request({ callId: 'call-e', idempotencyKey: 'turn-1:call-e', tool: 'escalate', arguments: { reason: '   ' } }));
      expect(empty).toMatchObject({ isError: true, effects: {} });
      expect(empty.content).toContain('ctx.handoff');
    });

    it('answers a failing tool, bad arguments and an unknown tool with an error result, never a rejection', async () => {
      const subject = await dispatcher();
      // Three calls, three call ids: a dispatcher may treat a repeated id as the same call (and answer it again).
      const call = (callId: string, overrides: Partial<ToolCallRequest>) => request({ callId, idempotencyKey: `turn-1:${callId}`, ...overrides });
      expect(await subject.dispatch(call('call-a', { tool: 'explode' }))).toMatchObject({
        isError: true,
        content: expect.stringContaining('disk on fire'),
        effects: {},
      });
      expect(await subject.dispatch(call('call-b', { tool: 'become', arguments: { role: 5 } }))).toMatchObject({
        isError: true,
        content: expect.stringContaining('Invalid arguments'),
      });
      expect(await subject.dispatch(call('call-c', { tool: 'teleport' }))).toMatchObject({ isError: true, content: expect.stringContaining('teleport') });
    });

    it('is safe to close twice', async () => {
      const subject = await dispatcher();
      await subject.close();
      await subject.close();
    });
  });
}
