import type { z } from 'zod';

/**
 * Explains one unknown key of a strict object: where it is and the nearest known key, e.g.
 * `Unknown key "historyLimt" in agent; did you mean "historyLimit"?`. Without a near key it lists the known ones.
 * `path` is the object's path (empty for the top level); `known` its keys.
 */
export function describeUnknownKey(key: string, path: readonly PropertyKey[], known: readonly string[]): string {
  const where = path.length === 0 ? 'the config' : path.map(String).join('.');
  const nearest = nearestKey(key, known);
  if (nearest !== undefined) return `Unknown key "${key}" in ${where}; did you mean "${nearest}"?`;
  return known.length === 0 ? `Unknown key "${key}" in ${where}` : `Unknown key "${key}" in ${where}; known keys: ${known.join(', ')}`;
}

/**
 * The known key closest to `key` by edit distance (a swap of neighbours counts as one edit), ignoring case, `_`
 * and `-` so `history_limit` finds `historyLimit`; undefined when none is close enough to be a likely typo.
 */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  const wanted = simplify(key);
  // Short keys tolerate one slip; "foo" must not become "log".
  const allowed = wanted.length <= 4 ? 1 : wanted.length <= 8 ? 2 : 3;
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(wanted, simplify(candidate));
    if (distance <= allowed && (best === undefined || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}

function simplify(key: string): string {
  return key.toLowerCase().replace(/[-_]/g, '');
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = value;
    }
  }
  return rows[a.length]![b.length]!;
}

/** The slice of zod's internal definition that {@link knownKeysAt} walks. */
interface SchemaDef {
  readonly type: string;
  readonly shape?: Record<string, z.core.$ZodType>;
  readonly innerType?: z.core.$ZodType;
  readonly in?: z.core.$ZodType;
  readonly element?: z.core.$ZodType;
  readonly valueType?: z.core.$ZodType;
}

/** Keys of the object schema found at `path` inside `schema` (through defaults, optionals, arrays and records). */
export function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  let current: z.core.$ZodType | undefined = schema;
  for (const segment of path) {
    const def = unwrap(current)?._zod.def as SchemaDef | undefined;
    if (def === undefined) return [];
    if (def.type === 'object') current = def.shape?.[String(segment)];
    else if (def.type === 'array') current = def.element;
    else if (def.type === 'record') current = def.valueType;
    else return [];
  }
  const def = unwrap(current)?._zod.def as SchemaDef | undefined;
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

function unwrap(schema: z.core.$ZodType | undefined): z.core.$ZodType | undefined {
  let current = schema;
  for (let depth = 0; current !== undefined && depth < 20; depth++) {
    const def = current._zod.def as SchemaDef;
    if (def.innerType !== undefined) current = def.innerType;
    else if (def.type === 'pipe' && def.in !== undefined) current = def.in;
    else return current;
  }
  return current;
}
