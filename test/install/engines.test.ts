import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../cli/child-process.js';

interface LockedPackage {
  readonly engines?: { readonly node?: string };
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly os?: readonly string[];
  readonly cpu?: readonly string[];
}

const lock = JSON.parse(readFileSync(join(REPO_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockedPackage> };

/** The first release of each Node line Palaver supports, where an engines range is most likely to exclude it. */
const SUPPORTED = ['20.19.0', '22.13.0', '24.0.0'];

/** What `npm ci` installs on this platform: every locked package reachable from the root, less optional ones for another os or cpu. */
function installed(): Map<string, LockedPackage> {
  const found = new Map<string, LockedPackage>();
  const visit = (path: string) => {
    const entry = lock.packages[path];
    if (entry === undefined || found.has(path)) return;
    if ((entry.os && !entry.os.includes(process.platform)) || (entry.cpu && !entry.cpu.includes(process.arch))) return;
    found.set(path, entry);
    for (const name of Object.keys({ ...entry.dependencies, ...entry.devDependencies, ...entry.optionalDependencies })) {
      // Node's lookup: the nearest node_modules/<name> up from the package.
      const parts = path === '' ? [] : path.split('/node_modules/');
      for (let depth = parts.length; depth >= 0; depth -= 1) {
        const candidate = [...parts.slice(0, depth), name].join('/node_modules/');
        const key = depth === 0 ? `node_modules/${name}` : candidate;
        if (lock.packages[key] !== undefined) {
          visit(key);
          break;
        }
      }
    }
  };
  visit('');
  return found;
}

/** semver's `satisfies` for the ranges engines fields use: `||`, comparators, `^`, `~`, `x` and missing parts. */
function satisfies(version: string, range: string): boolean {
  const [major, minor, patch] = version.split('.').map(Number) as [number, number, number];
  const compare = (other: readonly number[]) => major - other[0]! || minor - other[1]! || patch - other[2]!;
  const test = (comparator: string): boolean => {
    const match = /^(\^|~|>=|<=|>|<|=)?\s*v?(\d+|x|\*)?(?:\.(\d+|x))?(?:\.(\d+|x))?/.exec(comparator.trim());
    if (!match || comparator.trim() === '*' || match[2] === undefined || match[2] === 'x' || match[2] === '*') return true;
    const [operator = '=', ...rest] = [match[1], match[2], match[3], match[4]];
    const given = rest.filter((part) => part !== undefined && part !== 'x').map(Number);
    const floor = [given[0] ?? 0, given[1] ?? 0, given[2] ?? 0];
    const bump = (index: number) => floor.map((part, at) => (at < index ? part : at === index ? part + 1 : 0));
    switch (operator) {
      case '>=':
        return compare(floor) >= 0;
      case '>':
        return given.length < 3 ? compare(bump(given.length - 1)) >= 0 : compare(floor) > 0;
      case '<':
        return compare(floor) < 0;
      case '<=':
        return given.length < 3 ? compare(bump(given.length - 1)) < 0 : compare(floor) <= 0;
      case '^':
        return compare(floor) >= 0 && compare(bump(floor[0] !== 0 || given.length === 1 ? 0 : 1)) < 0;
      case '~':
        return compare(floor) >= 0 && compare(bump(given.length === 1 ? 0 : 1)) < 0;
      default:
        return compare(floor) >= 0 && compare(bump(given.length - 1)) < 0;
    }
  };
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1')
      .split(/\s+/)
      .every(test),
  );
}

describe('npm ci', () => {
  it('reads the engines ranges as npm does', () => {
    expect(satisfies('20.19.0', '^20.19.0 || >=22.12.0')).toBe(true);
    expect(satisfies('22.11.0', '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfies('20.19.0', '^22.18.0 || >=24.11.0')).toBe(false);
    expect(satisfies('24.0.0', '>= 18')).toBe(true);
    expect(satisfies('20.19.0', '20.x || 22.x')).toBe(true);
    expect(satisfies('20.19.0', '>=22.0.0')).toBe(false);
  });

  it('installs no package whose engines exclude a supported Node (no EBADENGINE warning on 20.19, 22.13 or 24)', () => {
    const packages = installed();
    expect(packages.size).toBeGreaterThan(300);
    const excluded = [...packages].flatMap(([path, entry]) => {
      const range = entry.engines?.node;
      const misses = range === undefined ? [] : SUPPORTED.filter((version) => !satisfies(version, range));
      return misses.length === 0 ? [] : [`${path} (node ${range}) excludes ${misses.join(', ')}`];
    });
    expect(excluded).toEqual([]);
  });
});
