import { EventSchema } from '@ag-ui/core/schemas';

/** Parses a whole `text/event-stream` body into its JSON `data:` payloads. */
export function parseSse(body: string): Array<Record<string, unknown> & { type: string }> {
  return body
    .split('\n\n')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map((data) => JSON.parse(data) as Record<string, unknown> & { type: string });
}

/** Throws with the zod issues when an event is not a valid AG-UI event. */
export function assertValidAguiEvent(event: unknown): void {
  const result = EventSchema.safeParse(event);
  if (!result.success) throw new Error(`invalid AG-UI event ${JSON.stringify(event)}: ${result.error.message}`);
}
