import type { ModelScript } from '../models/scripted/scripted-model.js';

/**
 * A deterministic stand-in model for the salon demo: it reads the appointments from the hidden context block in its
 * instructions, as a real model would, and cancels or moves the one whose description shares a word with what the
 * person said (the first one otherwise).
 */
export const salonScript: ModelScript = (call) => {
  const last = call.messages.at(-1);
  if (last?.type === 'tool_result') return { text: last.output.replace(/^Error: /, 'Sorry: ') };

  const said = [...call.history].reverse().find((item) => item.type === 'message' && item.role === 'user');
  const text = said?.type === 'message' ? said.content.toLowerCase() : '';
  // Each description is a quoted JSON string in the hidden block.
  const appointments = [...call.instructions.matchAll(/^- id (\d+): (".*")$/gm)].map((match) => ({
    id: Number(match[1]),
    description: JSON.parse(match[2]!) as string,
  }));
  const words = text.split(/[^\p{L}\p{N}]+/u).filter((word) => word.length > 3);
  const meant = appointments.find((appointment) => words.some((word) => appointment.description.toLowerCase().includes(word))) ?? appointments[0];

  const when = /(\d{4}-\d{2}-\d{2})\D+(\d{2}:\d{2})/.exec(text);
  if (meant && when && /\b(move|reschedule)\b/.test(text)) {
    return { toolCalls: [{ name: 'reschedule_appointment_by_id', arguments: { appointment_id: meant.id, date: when[1], time: when[2] } }] };
  }
  if (meant && /\bcancel\b/.test(text)) return { toolCalls: [{ name: 'cancel_appointment_by_id', arguments: { appointment_id: meant.id } }] };
  if (appointments.length > 0) return { text: `Your appointments:\n${appointments.map((appointment) => `• ${appointment.description}`).join('\n')}` };
  return { text: '(scripted salon) Try "show my appointments", "cancel the haircut" or "move the manicure to 2026-12-10 12:00".' };
};
