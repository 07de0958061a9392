import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { configSchema } from '../../src/config/schema.js';

// docs/configuration.md is the list people look settings up in: a key added to the schema without a line there is a
// setting nobody can find. Every key of the schema must be named in the section of the reference that covers it.

const reference = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');

/** The schema behind defaults, optionals, pipes and the like: what decides which keys a value has. */
function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  const def = schema._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType; out?: z.core.$ZodType };
  if (def.innerType) return unwrap(def.innerType);
  if (def.type === 'pipe' && def.in && def.out) return unwrap(def.in._zod.def.type === 'transform' ? def.out : def.in);
  return schema;
}

/** Dotted paths of every key the config may hold, array items as `[]`; records (keys you choose) end a path. */
function keyPaths(schema: z.core.$ZodType, prefix: string): string[] {
  const inner = unwrap(schema);
  const def = inner._zod.def as { type: string; shape?: Record<string, z.core.$ZodType>; element?: z.core.$ZodType; options?: z.core.$ZodType[] };
  if (def.type === 'object' && def.shape) {
    return Object.entries(def.shape).flatMap(([key, child]) => {
      const path = prefix === '' ? key : `${prefix}.${key}`;
      return [path, ...keyPaths(child, path)];
    });
  }
  if (def.type === 'array' && def.element) return keyPaths(def.element, `${prefix}[]`);
  if (def.type === 'union' && def.options) return [...new Set(def.options.flatMap((option) => keyPaths(option, prefix)))];
  return [];
}

/** The reference's sections by the setting their heading names in code (`agent`, `channels.web`, `tools` and `redis`). */
function sections(markdown: string): Map<string, string> {
  const found = new Map<string, string>();
  const parts = markdown.split(/^## /m).slice(1);
  for (const part of parts) {
    const heading = part.slice(0, part.indexOf('\n'));
    for (const [, name] of heading.matchAll(/`([A-Za-z.]+)`/g)) if (name) found.set(name, part);
  }
  return found;
}

describe('docs/configuration.md', () => {
  const bySection = sections(reference);
  const paths = keyPaths(configSchema, '');

  it("finds the schema's keys (a guard against reading the schema wrongly)", () => {
    expect(paths).toContain('agent.actions.maxActions');
    expect(paths).toContain('focus.stages[].keywords');
    expect(paths).toContain('identity.resolver.cacheTtlSeconds');
    expect(paths).toContain('billing.usdRates');
    expect(paths.length).toBeGreaterThan(150);
  });

  it('names every key of the schema in the section that covers it', () => {
    const missing = paths.flatMap((path) => {
      const clean = path.replaceAll('[]', '');
      // The section of the longest heading that is a prefix of the path (`channels.web` before `channels`).
      const owner = [...bySection.keys()].filter((name) => clean === name || clean.startsWith(`${name}.`)).sort((a, b) => b.length - a.length)[0];
      if (owner === undefined) return [`${path}: no section`];
      if (clean === owner) return [];
      const key = clean.slice(clean.lastIndexOf('.') + 1);
      const named = new RegExp(`\`[^\`\\n]*\\b${key}\\b[^\`\\n]*\``).test(bySection.get(owner) ?? '');
      return named ? [] : [`${path} (section ${owner})`];
    });
    expect(missing).toEqual([]);
  });
});
