/** What `fetch` callers expect of an answer and a failure, shared by both wires. */

/** `Response` refuses a status text outside HTTP's reason-phrase characters; fetch keeps such an answer, so does this. */
export function reasonPhrase(text: string | undefined): string {
  return text !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(text) ? text : '';
}

export function toHeaderRecord(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (headers == null) return record;
  // A Headers object (of any fetch implementation) and an array iterate as [name, value] pairs.
  const pairs = Symbol.iterator in headers ? (headers as Iterable<[string, string]>) : Object.entries(headers);
  for (const [name, value] of pairs) if (value !== undefined) record[name.toLowerCase()] = String(value);
  return record;
}

/** What `fetch` rejects with when aborted: the signal's reason, else a DOMException named AbortError. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}
