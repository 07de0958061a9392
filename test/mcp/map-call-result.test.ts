import { describe, expect, it } from 'vitest';
import { mapCallResult, toHostedMcpSpec } from '../../src/tools/mcp/index.js';

describe('mapCallResult', () => {
  it('joins text items and summarises images, audio, resources and links', () => {
    const result = mapCallResult(
      'report',
      {
        content: [
          { type: 'text', text: 'Two cargoes.' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///manifest.txt', text: 'C-1 Oslo → Bergen' } },
          { type: 'resource', resource: { uri: 'file:///scan.pdf', blob: 'AAAA', mimeType: 'application/pdf' } },
          { type: 'resource_link', uri: 'file:///invoice.pdf', name: 'invoice' },
        ],
      },
      1_000,
    );

    expect(result).toEqual({
      content: [
        'Two cargoes.',
        '[image: image/png]',
        '[audio: audio/wav]',
        '[resource: file:///manifest.txt]\nC-1 Oslo → Bergen',
        '[resource: file:///scan.pdf (application/pdf)]',
        '[resource link: invoice file:///invoice.pdf]',
      ].join('\n'),
      isError: false,
    });
  });

  it('uses the JSON of structured content when there is no text, and keeps it as structured', () => {
    const result = mapCallResult('cargo_add', { content: [], structuredContent: { cargo_id: 'C-7' } }, 1_000);

    expect(result).toEqual({ content: '{"cargo_id":"C-7"}', structured: { cargo_id: 'C-7' }, isError: false });
  });

  it('gives an error result without content a message the model can read', () => {
    expect(mapCallResult('fail_tool', { content: [], isError: true }, 1_000)).toEqual({
      content: 'Tool fail_tool failed without a message',
      isError: true,
    });
  });

  it('reads the 2024-10-07 protocol shape { toolResult }', () => {
    expect(mapCallResult('legacy', { toolResult: { ok: true } }, 1_000)).toMatchObject({ content: '{"ok":true}', structured: { ok: true } });
  });
});

describe('toHostedMcpSpec', () => {
  it('adds a bearer Authorization header only when a token is set', () => {
    expect(toHostedMcpSpec({ label: 'docs', url: 'https://mcp.example.com/mcp' })).toEqual({
      serverLabel: 'docs',
      serverUrl: 'https://mcp.example.com/mcp',
      requireApproval: 'never',
    });
    expect(
      toHostedMcpSpec({ label: 'docs', url: 'https://mcp.example.com/mcp', bearerToken: 'abc', allowedTools: ['search'], requireApproval: 'always' }),
    ).toEqual({
      serverLabel: 'docs',
      serverUrl: 'https://mcp.example.com/mcp',
      headers: { Authorization: 'Bearer abc' },
      allowedTools: ['search'],
      requireApproval: 'always',
    });
  });
});

describe('mapCallResult size cap', () => {
  it('leaves out structured content larger than the cap and caps the text that stands for it', () => {
    const rows = Array.from({ length: 200 }, (_, index) => ({ id: index, name: `cargo ${index}` }));
    const result = mapCallResult('get_user_cargoes', { content: [], structuredContent: { rows } }, 500);
    expect(result.structured).toBeUndefined();
    expect(result.content.length).toBeLessThan(600);
    expect(result.content).toMatch(/…\[truncated \d+ chars\]$/);
  });

  it('keeps structured content within the cap', () => {
    const result = mapCallResult('set_role', { content: [{ type: 'text', text: 'Role set' }], structuredContent: { role: 'client' } }, 500);
    expect(result).toEqual({ content: 'Role set', structured: { role: 'client' }, isError: false });
  });
});
