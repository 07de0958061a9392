import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../cli/child-process.js';

const EXAMPLES = join(REPO_ROOT, 'examples');
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
};

/** Every module specifier a TypeScript file imports (static, dynamic and type-only imports, and re-exports). */
function specifiers(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"\s]+)['"]/gm)].map((match) => match[1]!);
}

describe('the examples', () => {
  it('import Palaver as a project does (palaver and its exported subpaths), never its src/, so a copy runs in a palaver init project', () => {
    const files = readdirSync(EXAMPLES, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts') && !file.split(sep).includes('data'));
    expect(files.length).toBeGreaterThan(5);
    const entryPoints = new Set(Object.keys(manifest.exports).map((key) => (key === '.' ? 'palaver' : `palaver/${key.slice(2)}`)));
    const problems: string[] = [];
    for (const file of files) {
      const example = file.split(sep)[0]!;
      for (const specifier of specifiers(readFileSync(join(EXAMPLES, file), 'utf8'))) {
        if (specifier.startsWith('.')) {
          // Relative imports stay inside the example's own folder, which is what gets copied.
          const target = relative(join(EXAMPLES, example), resolve(dirname(join(EXAMPLES, file)), specifier));
          if (target.startsWith('..')) problems.push(`${file}: ${specifier} leaves examples/${example}/`);
        } else if (specifier.startsWith('palaver')) {
          if (!entryPoints.has(specifier)) problems.push(`${file}: ${specifier} is not in package.json "exports"`);
        } else if (!specifier.startsWith('node:')) {
          // A package Palaver itself depends on (zod, the MCP SDK), so it is installed beside it.
          const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
          if (manifest.dependencies[name] === undefined) problems.push(`${file}: ${specifier} is not a dependency of Palaver`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
