import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebChannel } from '../../src/channels/web/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { BROWSER_ASSETS_DIR, readBrowserAsset } from '../../src/platform/browser-assets.js';
import { createHttpApp } from '../../src/server/index.js';
import { TEST_SECRETS } from '../support/secrets.js';

// The pages' libraries (Chart.js, markdown-it) are devDependencies: `npm run build` copies their browser files into
// dist/browser/ (`npm test` builds first), and the server serves them from there.
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the browser libraries the pages load', () => {
  it("serves the chat page's Markdown renderer and the dashboard's charts as the build put them in dist/browser/", async () => {
    const channel = new WebChannel({ maxInboundChars: 100, logger: silentLogger() });
    const app = createHttpApp({ health: async () => ({}), logger: silentLogger(), adminToken: TEST_SECRETS.adminToken, routes: channel.routes });
    expect(await (await app.request('http://127.0.0.1/')).text()).toContain('<script src="markdown-it.min.js"');
    for (const [path, file] of [
      ['/markdown-it.min.js', 'markdown-it.min.js'],
      ['/admin/assets/chart.umd.min.js', 'chart.umd.min.js'],
    ] as const) {
      const response = await app.request(`http://127.0.0.1${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(await response.text()).toBe(readFileSync(join(BROWSER_ASSETS_DIR, file), 'utf8'));
    }
  });

  it('says to run `npm run build` when the package was not built', () => {
    const dir = mkdtempSync(join(tmpdir(), 'palaver-no-build-'));
    dirs.push(dir);
    expect(() => readBrowserAsset('markdown-it.min.js', dir)).toThrow(
      expect.objectContaining({ code: 'web_assets_missing', message: expect.stringContaining('run `npm run build`') }),
    );
  });
});
