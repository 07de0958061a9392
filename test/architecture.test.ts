import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sourceFiles(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports, static or dynamic. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((match) => match[1]!);
}

/** Libraries the core may use: small, pure helpers. No SDK, driver, server framework or channel library. */
const CORE_PACKAGES = new Set(['zod', 'lru-cache', 'decimal.js', 'intl-messageformat', 'bcp-47-match']);
/** Folders of `src/` the core may import from (the core itself, Palaver's own texts, and type-only observability). */
const CORE_FOLDERS = ['domain', 'runtime', 'i18n', 'observability'];

/**
 * Adapters: the folders that implement a port for one outside thing. Each channel folder, each store dialect, the
 * store's shared part (kysely repositories, migrations), models, local tools, the MCP tool host, the Redis queue,
 * the cluster bus, the admin API and identity (local and directory resolvers).
 */
const ADAPTERS = [
  ...['web', 'telegram-bot', 'telegram-user', 'console', 'memory', 'json-http'].map((name) => `channels/${name}`),
  'store',
  ...['sqlite', 'postgres', 'mysql'].map((dialect) => `store/${dialect}`),
  'models',
  'tools',
  'tools/mcp',
  'queue',
  'cluster',
  'admin',
  'identity',
];
/**
 * What an adapter may import besides its own folder: the core, config, observability, the shared infrastructure in
 * src/platform, the channel plug-in contract, and the two pieces channels share by design: channels/telegram (Bot API
 * and MTProto formatting, media, transcription: used by both Telegram channels, and by nothing else) and
 * channels/shared (streamed replies, reaction emoji). src/http-client is allowed for now: it is being replaced by
 * undici in platform (branch fix/libs). store/dialects.ts, the dialect registry, is allowed too: it says which
 * database a URL names, and the cluster bus picks its default from it (its entries load no driver). Not adapters, and free to import adapters, are the composition roots: app.ts,
 * index.ts, worker.ts, tool-hosts.ts, cli/, server/ (mounts channel and admin routes on one HTTP app),
 * channels/registry.ts, store/index.ts, store/open-store.ts and store/dialects.ts, demo/ and testing/.
 */
const ADAPTER_MAY_IMPORT = ['domain', 'runtime', 'i18n', 'config', 'observability', 'platform', 'http-client', 'channels/telegram', 'channels/shared', 'channels/channel-plugin.ts', 'store/dialects.ts'];

/**
 * Offences another branch removes (fix/rules takes src/testing out of production code). Each must still be there:
 * once it is gone, delete its line here.
 */
const PENDING_ELSEWHERE = ['channels/telegram-user/configured.ts imports ../../testing/fake-mtproto/remote-link.js'];

/** The unit a path under src/ belongs to: `channels/web`, `store/sqlite`, `tools/mcp`, `store`, `admin`, `app.ts`… */
function unitOf(path: string): string {
  const [top = '', second = '', ...rest] = path.split('/');
  if (second === '') return top;
  if (top === 'channels') return rest.length === 0 ? path : `channels/${second}`;
  if (top === 'store') return ['sqlite', 'postgres', 'mysql'].includes(second) ? `store/${second}` : rest.length === 0 && ['index.ts', 'open-store.ts', 'dialects.ts'].includes(second) ? path : 'store';
  if (top === 'tools' && second === 'mcp') return 'tools/mcp';
  return top;
}

/**
 * A store dialect may use the store's shared part (repositories, migrations), and that part's two tables by
 * dialect name (store/kysely/strategies.ts, store/migrations/dialect-schema.ts) each dialect's strategy and
 * migration types; the MCP tool host may use local tools' types.
 */
function sameFamily(from: string, to: string, file: string): boolean {
  if (from.startsWith('store/') && to === 'store') return true;
  if (['store/kysely/strategies.ts', 'store/migrations/dialect-schema.ts'].includes(file) && to.startsWith('store/')) return true;
  return from === 'tools/mcp' && to === 'tools';
}

describe('architecture', () => {
  const core = [...sourceFiles(join(SRC, 'domain')), ...sourceFiles(join(SRC, 'runtime'))];

  it('keeps the core (src/domain, src/runtime) free of adapters and SDKs', () => {
    const offences: string[] = [];
    for (const file of core) {
      for (const specifier of imports(file)) {
        if (specifier.startsWith('node:')) continue;
        if (specifier.startsWith('.')) {
          const folder = relative(SRC, resolve(dirname(file), specifier)).split('/')[0]!;
          if (!CORE_FOLDERS.includes(folder)) offences.push(`${relative(SRC, file)} imports ${specifier}`);
        } else if (!CORE_PACKAGES.has(specifier)) {
          offences.push(`${relative(SRC, file)} imports package ${specifier}`);
        }
      }
    }
    expect(offences).toEqual([]);
  });

  it('imports observability into the core for types only', () => {
    const offences = core.filter((file) => /^import (?!type )[^;]*from '[./]+observability\//m.test(readFileSync(file, 'utf8')));
    expect(offences.map((file) => relative(SRC, file))).toEqual([]);
  });

  it('reads the environment only in src/config', () => {
    const readers = sourceFiles(SRC)
      .filter((file) => !relative(SRC, file).startsWith('config/'))
      .filter((file) => /process\.env(?!`)/.test(readFileSync(file, 'utf8').replace(/^\s*(\*|\/\/).*$/gm, '')));
    expect(readers.map((file) => relative(SRC, file))).toEqual([]);
  });

  it('keeps the domain free of the runtime', () => {
    const offences = sourceFiles(join(SRC, 'domain')).flatMap((file) =>
      imports(file)
        .filter((specifier) => specifier.startsWith('.') && relative(SRC, resolve(dirname(file), specifier)).split('/')[0] !== 'domain')
        .map((specifier) => `${relative(SRC, file)} imports ${specifier}`),
    );
    expect(offences).toEqual([]);
  });

  it('keeps adapters from importing one another (shared pieces live in src/platform)', () => {
    const offences: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const from = unitOf(relative(SRC, file));
      if (!ADAPTERS.includes(from)) continue;
      for (const specifier of imports(file)) {
        if (!specifier.startsWith('.')) continue;
        const to = unitOf(relative(SRC, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts'));
        if (to === from || sameFamily(from, to, relative(SRC, file)) || ADAPTER_MAY_IMPORT.includes(to)) continue;
        offences.push(`${relative(SRC, file)} imports ${specifier}`);
      }
    }
    expect(offences.filter((offence) => !PENDING_ELSEWHERE.includes(offence))).toEqual([]);
    expect(PENDING_ELSEWHERE.filter((offence) => !offences.includes(offence))).toEqual([]);
  });
});
