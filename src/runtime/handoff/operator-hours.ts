/**
 * When operators answer (`operators.hours`): per weekday a range "09:00-18:00" in the hours' own time zone. Pure
 * arithmetic over IANA zones through `Intl`, so daylight-saving changes are the zone database's business.
 */

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface OperatorHours {
  /** IANA zone the ranges are in. */
  readonly timeZone: string;
  /** A range "HH:MM-HH:MM" per weekday; a day left out has nobody. */
  readonly days: Readonly<Partial<Record<Weekday, string | undefined>>>;
}

/** Whether operators answer now, or when they next start; undefined when no day has hours. */
export type OperatorAvailability = { readonly open: true } | { readonly open: false; readonly nextAt: Date };

export function operatorAvailability(hours: OperatorHours, now: Date): OperatorAvailability | undefined {
  if (!WEEKDAYS.some((day) => hours.days[day] !== undefined)) return undefined;
  const local = zonedParts(now, hours.timeZone);
  const time = `${pad(local.hour)}:${pad(local.minute)}`;
  // Today, then each day after it: a week ahead always reaches a day with hours.
  for (let ahead = 0; ahead <= 7; ahead++) {
    const date = new Date(Date.UTC(local.year, local.month - 1, local.day + ahead));
    const range = hours.days[WEEKDAYS[date.getUTCDay()]!];
    if (range === undefined) continue;
    const [start, end] = range.split('-') as [string, string];
    if (ahead === 0 && time >= start && time < end) return { open: true };
    if (ahead === 0 && time >= start) continue;
    const [hour, minute] = start.split(':').map(Number) as [number, number];
    return { open: false, nextAt: zonedInstant(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), hour, minute, hours.timeZone) };
  }
  return undefined;
}

interface ZonedParts {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock date and time of `instant` in `timeZone`. */
function zonedParts(instant: Date, timeZone: string): ZonedParts {
  let format = formatters.get(timeZone);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(instant).map((part) => [part.type, part.value]));
  return {
    year: Number(parts['year']),
    month: Number(parts['month']),
    day: Number(parts['day']),
    hour: Number(parts['hour']),
    minute: Number(parts['minute']),
    second: Number(parts['second']),
  };
}

/** How far `timeZone`'s wall clock is ahead of UTC at `epochMs`. */
function offsetMs(epochMs: number, timeZone: string): number {
  const p = zonedParts(new Date(epochMs), timeZone);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(epochMs / 1000) * 1000;
}

/**
 * The instant a wall-clock time in `timeZone` names. A time a daylight-saving jump skips comes out shifted by the
 * jump, as a clock set to it would show.
 */
export function zonedInstant(year: number, month: number, day: number, hour: number, minute: number, timeZone: string): Date {
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  const first = wall - offsetMs(wall, timeZone);
  const second = wall - offsetMs(first, timeZone);
  return new Date(second);
}

function pad(value: number): string {
  return String(value).padStart(2, '0');
}
