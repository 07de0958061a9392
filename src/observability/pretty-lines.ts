import { Writable } from 'node:stream';

/** pino's numeric levels, as people read them. */
const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' };

/** Fields every line carries that a person at a terminal does not need to read. */
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'app']);

/**
 * One JSON log line as a person reads it: `12:04:05 WARN  message  key=value …`, an error's stack indented below.
 * A line that is not JSON passes unchanged. Its values were scrubbed of secrets before they got here.
 */
export function prettyLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const level = LEVELS[Number(entry.level)] ?? String(entry.level).toUpperCase().padEnd(5);
  const time = typeof entry.time === 'number' ? new Date(entry.time).toTimeString().slice(0, 8) : '--:--:--';
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(entry)) {
    if (HIDDEN.has(key) || value === undefined) continue;
    if ((key === 'err' || key === 'error') && value && typeof value === 'object') {
      const { message, stack: trace, type: _type, ...rest } = value as Record<string, unknown>;
      if (typeof message === 'string') fields.push(`${key}=${JSON.stringify(message)}`);
      if (typeof trace === 'string') stack = `\n${trace.replace(/^/gm, '    ')}`;
      if (Object.keys(rest).length > 0) fields.push(`${key}.details=${JSON.stringify(rest)}`);
      continue;
    }
    fields.push(`${key}=${typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
  }
  const message = typeof entry.msg === 'string' ? entry.msg : '';
  return `${time} ${level} ${message}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}${stack}`;
}

/** A log destination that writes each JSON line pino produced to `out` (a terminal) as {@link prettyLine}. */
export function prettyDestination(out: NodeJS.WritableStream): Writable {
  let pending = '';
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      const text = lines
        .filter((line) => line !== '')
        .map((line) => `${prettyLine(line)}\n`)
        .join('');
      if (text === '') done();
      else out.write(text, () => done());
    },
  });
}
