/**
 * Loads Node's built-in `node:sqlite` without its "SQLite is an experimental feature" warning. Node 22 prints that
 * line on the first load (Node 24 no longer does); Palaver chose the module on purpose and only where it is
 * complete, so the line would tell every person starting Palaver on Node 22 about a choice that is not theirs. Only
 * that one warning is held back, and only while the module loads.
 */
export function loadNodeSqlite(): unknown {
  if (typeof process.getBuiltinModule !== 'function') return undefined;
  const emitWarning = process.emitWarning;
  process.emitWarning = function quietSqliteWarning(this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const message = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : typeof warning === 'string' ? (rest[0] as { type?: string } | undefined)?.type : warning.name;
    if (type === 'ExperimentalWarning' && /\bSQLite\b/.test(message)) return;
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return process.getBuiltinModule('node:sqlite');
  } finally {
    process.emitWarning = emitWarning;
  }
}
