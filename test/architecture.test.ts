import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
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

/** The `.ts` file a relative specifier names: `./x.js` is `./x.ts`, a folder is its `index.ts`. */
function resolveSource(file: string, specifier: string): string | undefined {
  const target = resolve(dirname(file), specifier);
  const candidates = [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, join(target, 'index.ts')];
  return candidates.find((candidate) => candidate.endsWith('.ts') && existsSync(candidate) && statSync(candidate).isFile());
}

/** Each file's imports of other files of `src/`, resolved. */
function importGraph(files: string[]): Map<string, string[]> {
  return new Map(
    files.map((file) => {
      const targets = imports(file)
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => resolveSource(file, specifier))
        .filter((target) => target !== undefined);
      return [relative(SRC, file), [...new Set(targets.map((target) => relative(SRC, target)))]];
    }),
  );
}

/** The same graph between the top-level folders of `src/`; a file at the top (`app.ts`) stands for itself. */
function folderGraph(files: Map<string, string[]>): Map<string, string[]> {
  const folder = (file: string): string => file.split('/')[0]!;
  const graph = new Map<string, Set<string>>();
  for (const [file, targets] of files) {
    const from = graph.get(folder(file)) ?? graph.set(folder(file), new Set()).get(folder(file))!;
    for (const target of targets) if (folder(target) !== folder(file)) from.add(folder(target));
  }
  return new Map([...graph].map(([from, targets]) => [from, [...targets]]));
}

/** Tarjan's algorithm: the strongly connected components, each a set of nodes that all reach one another. */
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    components.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return components;
}

/** The shortest way from `start` back to itself inside `members` (breadth-first), as `a -> b -> a`. */
function shortestCycle(graph: Map<string, string[]>, members: Set<string>, start: string): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    const targets = graph.get(node) ?? [];
    if (targets.includes(start)) {
      const path = [node];
      while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
      return [...path, start];
    }
    for (const next of targets) {
      if (members.has(next) && next !== start && !cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [];
}

/**
 * Every import cycle of `graph`, each as a path (`a.ts -> b.ts -> a.ts`): for each tangle of modules that reach one
 * another, the shortest cycle through each module that no cycle printed so far passes, so every module of a tangle
 * shows up in at least one cycle and each cycle can be cut where it reads wrong.
 */
function importCycles(graph: Map<string, string[]>): string[] {
  return stronglyConnected(graph).flatMap((component) => {
    const members = new Set(component);
    if (component.length === 1 && !graph.get(component[0]!)?.includes(component[0]!)) return [];
    const shown = new Set<string>();
    return component.flatMap((start) => {
      if (shown.has(start)) return [];
      const cycle = shortestCycle(graph, members, start);
      for (const node of cycle) shown.add(node);
      return [cycle.join(' -> ')];
    });
  });
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
 * channels/shared (streamed replies, reaction emoji). store/dialects.ts, the dialect registry, is allowed too: it says which
 * database a URL names, and the cluster bus picks its default from it (its entries load no driver). Not adapters, and free to import adapters, are the composition roots: app.ts,
 * index.ts, worker.ts, tool-hosts.ts, cli/, server/ (mounts channel and admin routes on one HTTP app),
 * channels/registry.ts, store/index.ts, store/open-store.ts and store/dialects.ts, demo/ and testing/.
 */
const ADAPTER_MAY_IMPORT = [
  'domain',
  'runtime',
  'i18n',
  'config',
  'observability',
  'platform',
  'channels/telegram',
  'channels/shared',
  'channels/channel-plugin.ts',
  'store/dialects.ts',
];

/** The unit a path under src/ belongs to: `channels/web`, `store/sqlite`, `tools/mcp`, `store`, `admin`, `app.ts`… */
function unitOf(path: string): string {
  const [top = '', second = '', ...rest] = path.split('/');
  if (second === '') return top;
  if (top === 'channels') return rest.length === 0 ? path : `channels/${second}`;
  if (top === 'store')
    return ['sqlite', 'postgres', 'mysql'].includes(second)
      ? `store/${second}`
      : rest.length === 0 && ['index.ts', 'open-store.ts', 'dialects.ts'].includes(second)
        ? path
        : 'store';
  if (top === 'tools' && second === 'mcp') return 'tools/mcp';
  return top;
}

/**
 * A store dialect may use the store's shared part (repositories, migrations), never the other way round: the shared
 * part reaches a dialect's strategy and migration types only through the registry (store/dialects.ts). The MCP tool
 * host may use local tools' types.
 */
function sameFamily(from: string, to: string): boolean {
  if (from.startsWith('store/') && to === 'store') return true;
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

  // The one exception: the Telegram sandbox of `palaver dev --telegram` exists to run the fake Bot API for a person.
  it('imports src/testing only from inside src/testing: fakes are injected, never reached for', () => {
    const offences = sourceFiles(SRC)
      .filter((file) => !relative(SRC, file).startsWith('testing/') && !relative(SRC, file).startsWith('dev/telegram-sandbox/'))
      .flatMap((file) =>
        imports(file)
          .filter((specifier) => specifier.startsWith('.') && relative(SRC, resolve(dirname(file), specifier)).split('/')[0] === 'testing')
          .map((specifier) => `${relative(SRC, file)} imports ${specifier}`),
      );
    expect(offences).toEqual([]);
  });

  // Type-only imports count as much as value imports: a type two modules share belongs to one of them or to a module
  // below both, and a cycle of types is where a cycle of values grows back.
  it('has no import cycle between files of src/', () => {
    const cycles = importCycles(importGraph(sourceFiles(SRC)));
    expect(cycles).toEqual([]);
  });

  it('has no import cycle between the top-level folders of src/', () => {
    const cycles = importCycles(folderGraph(importGraph(sourceFiles(SRC))));
    expect(cycles).toEqual([]);
  });

  it('keeps adapters from importing one another (shared pieces live in src/platform)', () => {
    const offences: string[] = [];
    for (const file of sourceFiles(SRC)) {
      const from = unitOf(relative(SRC, file));
      if (!ADAPTERS.includes(from)) continue;
      for (const specifier of imports(file)) {
        if (!specifier.startsWith('.')) continue;
        const to = unitOf(relative(SRC, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts'));
        if (to === from || sameFamily(from, to) || ADAPTER_MAY_IMPORT.includes(to)) continue;
        offences.push(`${relative(SRC, file)} imports ${specifier}`);
      }
    }
    expect(offences).toEqual([]);
  });
});
