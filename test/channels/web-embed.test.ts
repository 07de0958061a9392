import { describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { parseConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createHttpApp } from '../../src/server/index.js';

function app(allowedOrigins?: string[]) {
  const channel = new WebChannel({ maxInboundChars: 100, logger: silentLogger(), ...(allowedOrigins ? { embed: { allowedOrigins } } : {}) });
  return createHttpApp({ health: async () => ({}), logger: silentLogger(), routes: channel.routes });
}

describe('the chat on other sites (widget and frame)', () => {
  it('lets no site frame the chat unless the config names it', async () => {
    const response = await app().request('http://127.0.0.1/embed');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(await response.text()).toContain('data-embed-origins=""');
  });

  it('names the allowed sites in frame-ancestors and in the framed page, and never lets / be framed', async () => {
    const server = app(['https://shop.example', 'https://www.shop.example:8443']);
    const embed = await server.request('http://127.0.0.1/embed');
    expect(embed.headers.get('content-security-policy')).toMatch(/frame-ancestors https:\/\/shop\.example https:\/\/www\.shop\.example:8443$/);
    expect(await embed.text()).toContain('data-embed-origins="https://shop.example https://www.shop.example:8443"');
    const page = await server.request('http://127.0.0.1/');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).not.toContain('data-embed-origins');
  });

  it('serves the loader script to other sites’ pages', async () => {
    const response = await app(['https://shop.example']).request('http://127.0.0.1/widget.js');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(await response.text()).toContain('Palaver');
  });

  it('gives the framed page over https a partitioned cross-site visitor cookie, and the page itself a Lax one', async () => {
    const server = app(['https://shop.example']);
    const framed = (await server.request('https://chat.example/embed', { headers: { host: '127.0.0.1' } })).headers.get('set-cookie');
    expect(framed).toMatch(/^__Host-palaver_visitor=v1\.[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=None; Partitioned; Secure$/);
    const page = (await server.request('https://chat.example/', { headers: { host: '127.0.0.1' } })).headers.get('set-cookie');
    expect(page).toMatch(/HttpOnly; SameSite=Lax; Secure$/);
    // Over plain http a SameSite=None cookie would be refused by browsers: the framed page keeps Lax.
    expect((await server.request('http://127.0.0.1/embed')).headers.get('set-cookie')).toMatch(/SameSite=Lax$/);
  });

  it("writes a new visitor's id into the framed page, uncached, for a browser that keeps no cookie there; never into / or for a cookie it has", async () => {
    const server = app(['https://shop.example']);
    const framed = await server.request('http://127.0.0.1/embed');
    const cookie = framed.headers.get('set-cookie')!.split(';')[0]!;
    const html = await framed.text();
    expect(html).toContain(`data-visitor="${cookie.split('=')[1]}"`);
    expect(framed.headers.get('cache-control')).toBe('no-store');
    const again = await server.request('http://127.0.0.1/embed', { headers: { cookie } });
    expect(await again.text()).not.toContain('data-visitor');
    expect(again.headers.get('cache-control')).toBe('no-cache');
    expect(await (await server.request('http://127.0.0.1/')).text()).not.toContain('data-visitor');
  });

  it('refuses an allowed origin that is not just scheme, host and port', () => {
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { embed: { allowedOrigins: ['https://shop.example/path'] } } } })).toThrow(
      /allowedOrigins/,
    );
    expect(() => parseConfig({ model: { name: 'm' }, channels: { web: { embed: { allowedOrigins: ["https://shop.example 'unsafe-inline'"] } } } })).toThrow(
      /allowedOrigins/,
    );
    expect(parseConfig({ model: { name: 'm' } }).channels.web.embed.allowedOrigins).toEqual([]);
    // Passed straight to the channel (not through the config), a non-http origin is refused at construction.
    expect(() => new WebChannel({ maxInboundChars: 100, embed: { allowedOrigins: ['javascript:alert(1)'] } })).toThrow(/embed\.allowedOrigins/);
  });
});
