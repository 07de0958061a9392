import { createServer } from 'node:net';
import type { ModelEndpointConfig } from '../../src/config/schema.js';
import type { ModelInputItem, ModelRequest } from '../../src/domain/ports/model-provider.js';

export const PROVIDERS = ['openai-chat', 'openai-responses'] as const;

export function endpoint(baseUrl: string, overrides: Partial<ModelEndpointConfig> = {}): ModelEndpointConfig {
  return { provider: 'openai-chat', name: 'scripted-model', baseUrl, timeoutMs: 2_000, maxRetries: 0, ...overrides };
}

export function userSays(content: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return { instructions: 'You are a test agent.', input: [{ type: 'message', role: 'user', content }], tools: [], ...extra };
}

export const lookupTool = {
  name: 'lookup',
  description: 'Looks a record up by id.',
  parameters: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] },
} as const;

export const user = (content: string): ModelInputItem => ({ type: 'message', role: 'user', content });

/** A loopback port nobody listens on. */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
