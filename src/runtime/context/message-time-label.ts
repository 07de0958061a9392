/**
 * When a person's message was written, as the model reads it with `agent.historyTimes`: `[Fri 2025-03-14 09:05]` in
 * the person's time zone (their profile's), the way a messenger shows it. Times are stored as UTC instants; the zone
 * is applied only here, when rendering. The zone itself is named once, in the instructions' runtime facts.
 */

/** When a stored message was written: a recorded one (history sync) or a turn's keeps it in `meta.at`, else its storing. */
export function writtenAt(message: { readonly createdAt: Date; readonly meta: Readonly<Record<string, unknown>> | null }): Date {
  const at = message.meta?.['at'];
  if (typeof at !== 'string') return message.createdAt;
  const parsed = new Date(at);
  return Number.isNaN(parsed.getTime()) ? message.createdAt : parsed;
}

/** One formatter per zone: building an Intl.DateTimeFormat costs ~30x formatting with one. */
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATTERS = 1024;

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      weekday: 'short',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** `Fri 2025-03-14 09:05`: `at` in `timeZone`, 24-hour, unambiguous whatever the locale. */
export function localTime(at: Date, timeZone: string): string {
  const part: Record<string, string> = {};
  for (const { type, value } of formatterFor(timeZone).formatToParts(at)) part[type] = value;
  return `${part['weekday']} ${part['year']}-${part['month']}-${part['day']} ${part['hour']}:${part['minute']}`;
}

/** `text` with when it was written in front, or as it is without a zone to show it in. */
export function withTime(text: string, at: Date | undefined, timeZone: string | undefined): string {
  return at === undefined || timeZone === undefined ? text : `[${localTime(at, timeZone)}] ${text}`;
}
