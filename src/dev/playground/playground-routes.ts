import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Hono } from 'hono';
import type { Palaver } from '../../app.js';
import { PACKAGE_ROOT } from '../../platform/package-root.js';
import type { TurnRecorder } from '../turn-recorder.js';
import { playgroundTurns } from './playground-turns.js';

/** `web/dev/` of the package: the playground's page, script and styles. */
const PLAYGROUND_DIR = join(PACKAGE_ROOT, 'web', 'dev');

const FILES = {
  '/': { file: 'playground.html', type: 'text/html; charset=utf-8' },
  '/playground.js': { file: 'playground.js', type: 'text/javascript; charset=utf-8' },
  '/playground.css': { file: 'playground.css', type: 'text/css; charset=utf-8' },
} as const;

/** Its own files only; model output is drawn as text, never as markup. */
const POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Names a browser on this machine uses for a loopback server; any other is a page elsewhere rebinding its DNS to us. */
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/i;

/**
 * The playground of `palaver dev` (served by it alone, on loopback): `GET /dev` the page, `GET /dev/api/turns` the
 * last turns with their prompts, model calls, tool calls and replies. It shows the instructions and tool results the
 * person never sees, so it answers only requests addressed to a loopback name.
 */
export function playgroundRoutes(options: { readonly recorder: TurnRecorder; readonly agent: () => Palaver | undefined }): Hono {
  const app = new Hono();
  app.use('*', async (c, next) => {
    if (!LOOPBACK_HOST.test(c.req.header('host') ?? '')) return c.text('The playground answers on 127.0.0.1 or localhost only.', 403);
    await next();
    c.header('cache-control', 'no-store');
  });
  for (const [path, { file, type }] of Object.entries(FILES)) {
    // Read on each request: a developer's machine, and a changed page shows without a restart.
    app.get(path, (c) => c.body(readFileSync(join(PLAYGROUND_DIR, file), 'utf8'), 200, { 'content-type': type, 'content-security-policy': POLICY }));
  }
  app.get('/api/turns', async (c) => {
    const agent = options.agent();
    const turns = await playgroundTurns(options.recorder.turns(), agent?.store.operators, agent?.config.billing.usdRates ?? {});
    return c.json({ version: options.recorder.version, turns });
  });
  return app;
}
