import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Hono } from 'hono';
import { PalaverError } from '../domain/errors.js';

/** `web/` of the package: `../../web` from both `src/server/` and `dist/server/`. */
export const DEFAULT_WEB_DIR = fileURLToPath(new URL('../../web/', import.meta.url));

const FILES = [
  { route: '/', file: 'chat.html', type: 'text/html; charset=utf-8' },
  { route: '/chat.js', file: 'chat.js', type: 'text/javascript; charset=utf-8' },
  { route: '/chat.css', file: 'chat.css', type: 'text/css; charset=utf-8' },
] as const;

/** Same-origin only: the page loads no external asset and talks only to this server. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * Serves the web chat page (`GET /`, `/chat.js`, `/chat.css`). The files are read once, here, so a missing
 * `web/` fails at start with a clear message instead of on the first visit.
 */
export function mountChatPage(app: Hono, webDir: string = DEFAULT_WEB_DIR): void {
  for (const { route, file, type } of FILES) {
    let content: string;
    try {
      content = readFileSync(join(webDir, file), 'utf8');
    } catch (error) {
      throw new PalaverError('web_assets_missing', `Cannot read ${file} from ${webDir}; pass webDir, or chatPage: false to serve no chat page.`, { cause: error });
    }
    app.get(route, (c) => c.body(content, 200, { 'content-type': type, 'content-security-policy': CSP, 'cache-control': 'no-cache' }));
  }
}
