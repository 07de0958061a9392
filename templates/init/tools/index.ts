import { defineTool } from 'palaver';
import { z } from 'zod';

// Each tool: a name the model calls it by, a description it reads, an input schema Palaver checks the model's
// arguments against, and `run`. What `run` returns is shown to the model.
const HOURS: Readonly<Record<string, string>> = {
  monday: '9:00–18:00',
  tuesday: '9:00–18:00',
  wednesday: '9:00–18:00',
  thursday: '9:00–20:00',
  friday: '9:00–20:00',
  saturday: '10:00–16:00',
  sunday: 'closed',
};

export const openingHours = defineTool({
  name: 'opening_hours',
  description: 'Opening hours for one day of the week.',
  input: z.object({ day: z.enum(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']) }),
  run: ({ day }) => `${day}: ${HOURS[day]}`,
});

export const tools = [openingHours];
