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
});
