import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PalaverError } from '../../domain/errors.js';
import type { ChannelRoute } from '../../domain/ports/channel.js';
import { readBrowserAsset } from '../../platform/browser-assets.js';
import { PACKAGE_ROOT } from '../../platform/package-root.js';

/** `web/` of the package. */
export const DEFAULT_WEB_DIR = join(PACKAGE_ROOT, 'web');

const FILES = [
  { path: '/', file: 'chat.html', type: 'text/html; charset=utf-8' },
  // The same page for the widget's frame: compact, frameable by the allowed sites, taking their user tokens.
  { path: '/embed', file: 'chat.html', type: 'text/html; charset=utf-8' },
  { path: '/chat.js', file: 'chat.js', type: 'text/javascript; charset=utf-8' },
  { path: '/chat.css', file: 'chat.css', type: 'text/css; charset=utf-8' },
  { path: '/chat-texts.js', file: 'chat-texts.js', type: 'text/javascript; charset=utf-8' },
  { path: '/chat-drawer.js', file: 'chat-drawer.js', type: 'text/javascript; charset=utf-8' },
  // The loader a team's site includes with one <script> tag.
  { path: '/widget.js', file: 'widget.js', type: 'text/javascript; charset=utf-8' },
] as const;

/** One value, or one per language tag (`{ en: …, de: … }`), as the config gives a greeting or suggested prompts. */
export type Localised<T> = T | Readonly<Record<string, T>>;

/** How the page presents the agent (`agent.name`, `channels.web.accentColor`, `channels.web.logoUrl`, …). */
export interface PageAppearance {
  /** Shown in the page title and header instead of "Palaver". */
  readonly name?: string | undefined;
  /** A CSS hex colour (`#2f6feb`), already validated by the config schema. */
  readonly accentColor?: string | undefined;
  /** An http(s) URL or a path on this server. */
  readonly logoUrl?: string | undefined;
  /** Shown before the first message (`channels.web.greeting`). */
  readonly greeting?: Localised<string> | undefined;
  /** Questions offered under the greeting (`channels.web.suggestedPrompts`). */
  readonly suggestedPrompts?: Localised<readonly string[]> | undefined;
  /** `agent.language`: the greeting's language when the browser names none the config has. */
  readonly defaultLanguage?: string | undefined;
  /** What a person may attach (checked again on the server); absent: the page offers no attaching. */
  readonly attachments?: { readonly types: readonly string[]; readonly maxFileBytes: number; readonly maxFilesPerMessage: number } | undefined;
}

/**
 * Same-origin only: the page loads no external asset and talks only to this server; a logo from another site is the
 * one exception, allowed for its origin alone. `frameAncestors` are the sites that may show it in a frame (none:
 * no site may, which also stops clickjacking).
 */
function contentSecurityPolicy(appearance: PageAppearance, frameAncestors: readonly string[] = []): string {
  const logoOrigin = appearance.logoUrl && /^https?:/i.test(appearance.logoUrl) ? ` ${new URL(appearance.logoUrl).origin}` : '';
  const ancestors = frameAncestors.length === 0 ? "'none'" : frameAncestors.join(' ');
  return `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data: blob:${logoOrigin}; base-uri 'none'; form-action 'none'; frame-ancestors ${ancestors}`;
}

/**
 * `https://shop.example` as a browser spells an origin (scheme, host, port; no path), or a thrown error: only such a
 * value may go into a policy header or the page, where a space or `;` would change their meaning.
 */
function normaliseOrigin(origin: string): string {
  const url = new URL(origin);
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin === 'null') {
    throw new PalaverError(
      'invalid_embed_origin',
      `${JSON.stringify(origin)} is not an http(s) origin such as https://shop.example; fix channels.web.embed.allowedOrigins.`,
    );
  }
  return url.origin;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/**
 * Writes the agent's name, logo and accent colour into `chat.html`, escaped. The colour travels as a data attribute
 * that `chat.js` applies, because the policy allows no inline styles.
 */
function withAppearance(html: string, appearance: PageAppearance, embedOrigins?: readonly string[]): string {
  let page = html;
  if (appearance.name) {
    const name = escapeHtml(appearance.name);
    page = page.replace('<title>Palaver</title>', `<title>${name}</title>`).replace('>Palaver</h1>', `>${name}</h1>`);
  }
  // The framed page learns which parents may hand it a user token (the sites its frame-ancestors policy names).
  if (embedOrigins !== undefined) page = page.replace('<html lang="en"', `<html lang="en" data-embed-origins="${escapeHtml(embedOrigins.join(' '))}"`);
  if (appearance.accentColor) page = page.replace('<html lang="en"', `<html lang="en" data-accent="${escapeHtml(appearance.accentColor)}"`);
  // The greeting, prompts and attachment rules as JSON in attributes (the policy allows no inline script), escaped.
  if (appearance.greeting !== undefined || appearance.suggestedPrompts !== undefined) {
    const welcome = { greeting: appearance.greeting, prompts: appearance.suggestedPrompts, language: appearance.defaultLanguage };
    page = page.replace('<html lang="en"', `<html lang="en" data-welcome="${escapeHtml(JSON.stringify(welcome))}"`);
  }
  if (appearance.attachments) {
    const { types, maxFileBytes, maxFilesPerMessage } = appearance.attachments;
    page = page.replace(
      '<html lang="en"',
      `<html lang="en" data-attachments="${escapeHtml(JSON.stringify({ types, maxFileBytes, maxFiles: maxFilesPerMessage }))}"`,
    );
  }
  if (appearance.logoUrl) page = page.replace('<h1', `<img class="logo" data-testid="agent-logo" src="${escapeHtml(appearance.logoUrl)}" alt="">\n      <h1`);
  return page;
}

/**
 * The widget's loader with `channels.web.accentColor` as its launcher's colour (a tag's `data-accent-color` still
 * wins). The colour was checked to be hex by the config schema, and is checked here again before it enters a script.
 */
function withConfiguredAccent(script: string, accentColor: string | undefined): string {
  if (accentColor === undefined || !/^#[0-9a-f]{3,8}$/i.test(accentColor)) return script;
  return script.replace("const CONFIGURED_ACCENT = '';", `const CONFIGURED_ACCENT = '${accentColor}';`);
}

/**
 * What the page routes ask of the channel per request: a refusal, or extra headers (the visitor cookie), and for the
 * widget's frame the visitor id to write into the page (`data-visitor`), which stands in for a cookie the browser
 * may not keep in another site's page.
 */
export type PageRequestHook = (
  request: Request,
  path: string,
) => { readonly refuse: Response } | { readonly headers: Record<string, string>; readonly visitor?: string | undefined };

/**
 * The web chat page as public routes (`GET /`, `/chat.js`, `/chat.css`, `/chat-texts.js`, `/chat-drawer.js`, the Markdown renderer
 * `/markdown-it.min.js`), the widget's loader `/widget.js` and the page for its frame `/embed`. The files are read
 * once, here, so a missing `web/` fails at start with a clear message instead of on the first visit. `onRequest`
 * may refuse a request (a foreign `Host`) or add headers (the page's `Set-Cookie`); `appearance` names and colours
 * the page. `embedOrigins` (`channels.web.embed.allowedOrigins`) are the sites whose pages may frame `/embed`; none:
 * no site may, and `/` may never be framed.
 * @throws PalaverError `web_assets_missing` when a file cannot be read (markdown-it's is in `dist/browser/`, made by
 *   `npm run build`); `invalid_embed_origin` for an origin that is not http(s).
 */
export function chatPageRoutes(
  webDir: string = DEFAULT_WEB_DIR,
  onRequest?: PageRequestHook,
  appearance: PageAppearance = {},
  embedOrigins: readonly string[] = [],
): ChannelRoute[] {
  const origins = [...new Set(embedOrigins.map(normaliseOrigin))];
  const csp = contentSecurityPolicy(appearance);
  const embedCsp = contentSecurityPolicy(appearance, origins);
  const files = FILES.map(({ path, file, type }): { path: string; type: string; content: string } => {
    try {
      // A page folder of one's own made before the widget existed still gets the package's loader.
      const dir = file === 'widget.js' && !existsSync(join(webDir, file)) ? DEFAULT_WEB_DIR : webDir;
      const content = readFileSync(join(dir, file), 'utf8');
      if (file === 'widget.js') return { path, type, content: withConfiguredAccent(content, appearance.accentColor) };
      return { path, type, content: file === 'chat.html' ? withAppearance(content, appearance, path === '/embed' ? origins : undefined) : content };
    } catch (error) {
      throw new PalaverError('web_assets_missing', `Cannot read ${file} from ${webDir}; pass webDir, or webDir: false to serve no chat page.`, {
        cause: error,
      });
    }
  });
  // The Markdown renderer's own prebuilt browser file, as the build ships it: the page needs no bundler and no CDN.
  files.push({ path: '/markdown-it.min.js', type: 'text/javascript; charset=utf-8', content: readBrowserAsset('markdown-it.min.js') });
  return files.map(({ path, type, content }) => {
    const extra: Record<string, string> =
      path === '/'
        ? // For browsers older than frame-ancestors.
          { 'x-frame-options': 'DENY' }
        : path === '/widget.js'
          ? // Loaded by other sites' pages, also those that demand it (Cross-Origin-Embedder-Policy).
            { 'cross-origin-resource-policy': 'cross-origin' }
          : {};
    return {
      method: 'GET',
      path,
      access: 'public',
      handle: (request) => {
        const hook = onRequest?.(request, path);
        if (hook && 'refuse' in hook) return hook.refuse;
        const visitor = hook && 'visitor' in hook ? hook.visitor : undefined;
        const headers = {
          'content-type': type,
          'content-security-policy': path === '/embed' ? embedCsp : csp,
          // A page that carries a visitor id is that visitor's alone: no cache keeps it.
          'cache-control': visitor === undefined ? 'no-cache' : 'no-store',
          'referrer-policy': 'same-origin',
          'x-content-type-options': 'nosniff',
          ...extra,
          ...hook?.headers,
        };
        const body = visitor === undefined ? content : content.replace('<html lang="en"', `<html lang="en" data-visitor="${escapeHtml(visitor)}"`);
        return new Response(body, { status: 200, headers });
      },
    } satisfies ChannelRoute;
  });
}
