import { systemText, systemTextLanguage } from '../../i18n/index.js';
import { operatorAvailability, type OperatorHours } from './operator-hours.js';

export interface HandoffNoticeOptions {
  /** The person's interface language, and the agent's default. */
  readonly language: string;
  readonly defaultLanguage: string;
  /** The person's time zone: the next opening is shown in it. */
  readonly timeZone: string;
  /** `operators.hours`; absent: no time is promised. */
  readonly hours: OperatorHours | undefined;
  readonly now: Date;
}

/**
 * What the person is told when their conversation goes to a person, in their language: "shortly" within the
 * operators' hours, else when the next hours begin (weekday, date and time in the person's zone), and no time at all
 * when no hours are configured.
 */
export function handoffNotice(options: HandoffNoticeOptions): string {
  const { language, defaultLanguage } = options;
  const availability = options.hours === undefined ? undefined : operatorAvailability(options.hours, options.now);
  if (availability === undefined) return systemText(language, 'handoff.noTime', undefined, defaultLanguage);
  if (availability.open) return systemText(language, 'handoff.shortly', undefined, defaultLanguage);
  const when = formatOpening(availability.nextAt, systemTextLanguage(language, 'handoff.later', defaultLanguage), options.timeZone);
  return systemText(language, 'handoff.later', { when }, defaultLanguage);
}

/** "Monday, 15 June at 09:00 GMT+3", as the language writes it. */
export function formatOpening(at: Date, language: string, timeZone: string): string {
  return new Intl.DateTimeFormat(language, {
    timeZone,
    weekday: 'long',
    day: 'numeric',
    month: 'long',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(at);
}
