import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PalaverError } from '../../domain/errors.js';
import type { ChannelRoute } from '../../domain/ports/channel.js';
import { PACKAGE_ROOT } from '../../package-root.js';

/** `web/` of the package. */
export const DEFAULT_WEB_DIR = join(PACKAGE_ROOT, 'web');

const FILES = [
  { path: '/', file: 'chat.html', type: 'text/html; charset=utf-8' },
  { path: '/chat.js', file: 'chat.js', type: 'text/javascript; charset=utf-8' },
  { path: '/chat.css', file: 'chat.css', type: 'text/css; charset=utf-8' },
] as const;

/** Same-origin only: the page loads no external asset and talks only to this server. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** What the page routes ask of the channel per request: a refusal, or extra headers (the visitor cookie). */
export type PageRequestHook = (request: Request, path: string) => { readonly refuse: Response } | { readonly headers: Record<string, string> };

/** The Markdown renderer's own prebuilt browser file, from its package: the page needs no bundler and no CDN. */
function markdownRenderer(): string {
  const packageDir = dirname(dirname(createRequire(import.meta.url).resolve('markdown-it')));
  return readFileSync(join(packageDir, 'dist', 'markdown-it.min.js'), 'utf8');
}

/**
 * The web chat page as public routes (`GET /`, `/chat.js`, `/chat.css`, and the Markdown renderer
 * `/markdown-it.min.js`). The files are read once, here, so a
 * missing `web/` fails at start with a clear message instead of on the first visit. `onRequest` may refuse a
 * request (a foreign `Host`) or add headers (the page's `Set-Cookie`).
 * @throws PalaverError `web_assets_missing` when a file cannot be read.
 */
export function chatPageRoutes(webDir: string = DEFAULT_WEB_DIR, onRequest?: PageRequestHook): ChannelRoute[] {
  const files = FILES.map(({ path, file, type }): { path: string; type: string; content: string } => {
    try {
      return { path, type, content: readFileSync(join(webDir, file), 'utf8') };
    } catch (error) {
      throw new PalaverError('web_assets_missing', `Cannot read ${file} from ${webDir}; pass webDir, or webDir: false to serve no chat page.`, { cause: error });
    }
  });
  files.push({ path: '/markdown-it.min.js', type: 'text/javascript; charset=utf-8', content: markdownRenderer() });
  return files.map(({ path, type, content }) => {
    return {
      method: 'GET',
      path,
      access: 'public',
      handle: (request) => {
        const hook = onRequest?.(request, path);
        if (hook && 'refuse' in hook) return hook.refuse;
        const headers = { 'content-type': type, 'content-security-policy': CSP, 'cache-control': 'no-cache', 'referrer-policy': 'same-origin', 'x-content-type-options': 'nosniff', ...hook?.headers };
        return new Response(content, { status: 200, headers });
      },
    } satisfies ChannelRoute;
  });
}
