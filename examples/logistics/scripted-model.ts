/**
 * A deterministic stand-in for an LLM, so the logistics example runs without an API key. It reads the last user
 * message with a few regular expressions, calls the logistics tools the request offers, and words tool results as
 * short sentences. It is a script, not a model: anything it does not recognise gets a hint of what it understands.
 */
import type { ModelScript, ScriptedCall, ScriptedReply } from 'palaver/testing';

type Role = 'client' | 'transporter';

/** What a message says about a shipment; any part may be missing. */
export interface ShipmentDetails {
  readonly weightKg?: number;
  readonly from?: string;
  readonly to?: string;
}

const SAYS_CLIENT = /\b(client|shipper|i\s+ship|i\s+send|i\s+have\s+(?:a\s+|some\s+)?(?:cargo|freight|goods)|i\s+need\s+to\s+(?:ship|send|move))\b/i;
const SAYS_TRANSPORTER =
  /\b(transporter|carrier|driver|trucker|haulier|hauler|i\s+drive|i\s+carry|i\s+haul|i\s+deliver|i\s+(?:have|own)\s+a\s+(?:truck|van|lorry))\b/i;
const WANTS_OWN_LIST = /\b(my\s+(?:cargo(?:e?s)?|shipments?|loads?)|list|show\s+(?:me\s+)?(?:my|all))\b/i;
const WANTS_SEARCH = /\b(find|search|look(?:ing)?\s+for|any|available|open)\b|\bcargo(?:e?s)?\b|\bloads?\b/i;
const WANTS_TO_SHIP = /\b(ship|send|add|register|post|cargo|freight)\b/i;

/** The logistics conversation script; pass it to `startScriptedModelServer`. Only calls tools the call offers. */
export const logisticsScript: ModelScript = (call) => {
  const last = call.messages.at(-1);
  if (last?.type === 'tool_result') return { text: describeToolResult(call, last.callId, last.output) };
  return reactTo(lastUserText(call), call.toolNames);
};

function reactTo(said: string, toolNames: readonly string[]): ScriptedReply {
  const offers = (name: string): boolean => toolNames.includes(name);
  // The role is not in the request's words, but its tools give it away (see roles in palaver.config.yaml).
  const role: Role | undefined = offers('cargo_add') ? 'client' : offers('find_cargoes') ? 'transporter' : undefined;
  const shipment = parseShipment(said);
  const hasShipment = shipment.weightKg !== undefined && shipment.from !== undefined && shipment.to !== undefined;

  // A stated role (or, before any role, a complete shipment, which only a client sends) sets the role.
  const declared: Role | undefined = SAYS_TRANSPORTER.test(said) ? 'transporter' : SAYS_CLIENT.test(said) || (!role && hasShipment) ? 'client' : undefined;
  if (declared && declared !== role && offers('set_role')) return callTool('set_role', { role: declared });

  if (role === 'client') {
    if (hasShipment) return callTool('cargo_add', { from: shipment.from, to: shipment.to, weight_kg: shipment.weightKg });
    if (WANTS_OWN_LIST.test(said) && offers('get_user_cargoes')) return callTool('get_user_cargoes', {});
    if (/\b(find|search|look(?:ing)?\s+for)\b/i.test(said)) {
      return {
        text: 'Searching for cargo is for transporters. As a client you can register cargo and see your own; tell me "I am a transporter" if you carry cargo instead.',
      };
    }
    if (WANTS_TO_SHIP.test(said) || shipment.weightKg !== undefined || shipment.from !== undefined) return { text: askForMissing(shipment) };
    if (declared === 'client') return { text: 'You are set up as a client. What would you like to ship? For example: "ship 200 kg from Kyiv to Lviv".' };
    return { text: 'I can register a cargo ("ship 200 kg from Kyiv to Lviv") or show your cargo ("show my cargo"). What would you like to do?' };
  }

  if (role === 'transporter') {
    if (declared === 'transporter' && !/\b(find|search|look)/i.test(said)) {
      return { text: 'You are set up as a transporter. Where are you heading? For example: "find cargo to Lviv" or "search cargo from Kyiv".' };
    }
    if (WANTS_SEARCH.test(said) || shipment.from !== undefined || shipment.to !== undefined) {
      const filter = { ...(shipment.from ? { from: shipment.from } : {}), ...(shipment.to ? { to: shipment.to } : {}) };
      return callTool('find_cargoes', filter);
    }
    return { text: 'I can search open cargo for you, by route or all of it: try "find cargo to Lviv" or "search cargo".' };
  }

  return {
    text: 'Hello! I am the logistics assistant (a scripted demo, not a real LLM). Do you ship cargo (client) or carry it (transporter)?',
  };
}

function askForMissing(shipment: ShipmentDetails): string {
  const missing = [
    shipment.from === undefined ? 'where it leaves from' : undefined,
    shipment.to === undefined ? 'where it goes' : undefined,
    shipment.weightKg === undefined ? 'how much it weighs' : undefined,
  ].filter((part): part is string => part !== undefined);
  return `Happy to register it. Please tell me ${joinWords(missing)}, for example: "ship 200 kg from Kyiv to Lviv".`;
}

function describeToolResult(call: ScriptedCall, callId: string, output: string): string {
  const toolCall = call.history.find((item) => item.type === 'tool_call' && item.callId === callId);
  const name = toolCall?.type === 'tool_call' ? toolCall.name : undefined;
  switch (name) {
    case 'set_role': {
      const role = /\b(client|transporter)\b/.exec(output)?.[1];
      if (!role) break;
      return role === 'client'
        ? 'You are registered as a client. Tell me what to ship, for example: "ship 200 kg from Kyiv to Lviv".'
        : 'You are registered as a transporter. Tell me where you are heading, for example: "find cargo to Lviv".';
    }
    case 'cargo_add': {
      const added = /^Cargo (\S+) added: (.+)$/.exec(output);
      if (!added) break;
      return `Done! Your cargo ${added[1]} is registered: ${added[2]}. Transporters can find it now; say "show my cargo" to see everything you ship.`;
    }
    case 'get_user_cargoes':
      if (/^No cargoes/.test(output)) return 'You have no cargo registered yet. Tell me what to ship, for example: "ship 200 kg from Kyiv to Lviv".';
      return `Your cargo:\n${bulletList(output)}`;
    case 'find_cargoes':
      if (/^No matching/.test(output)) {
        const filtered = toolCall?.type === 'tool_call' && /"(from|to)"/.test(toolCall.arguments);
        return filtered
          ? 'No open cargo matches that route right now. Try a wider search, for example just "find cargo".'
          : 'There is no open cargo right now; try again later.';
      }
      if (/^C-\d+:/.test(output)) return `Open cargo I found:\n${bulletList(output)}`;
      break;
  }
  return `Sorry, that did not work: ${output}`;
}

/** Reads weight, origin and destination from free text: "ship 1.5 t from Kyiv to Lviv", "200kg Odesa to Kharkiv". */
export function parseShipment(text: string): ShipmentDetails {
  const details: { weightKg?: number; from?: string; to?: string } = {};
  const weight = /(\d+(?:[.,]\d+)?)\s*(kg|kgs|kilos?|kilograms?|t|tons?|tonnes?)\b/i.exec(text);
  if (weight) {
    const amount = Number(weight[1]!.replace(',', '.'));
    details.weightKg = /^(kg|kgs|kilo)/i.test(weight[2]!) ? amount : Math.round(amount * 1000);
  }
  // A place is one or two words; it ends at punctuation, the end, or a word that starts the next part.
  const from = findPlace(text, 'from');
  const to = findPlace(text, 'to');
  if (from) details.from = from;
  if (to) details.to = to;
  return details;
}

/** Words that end a place name ("to Lviv please") or show that "to" starts a verb ("need to ship"). */
const NOT_A_PLACE = new Set(['to', 'from', 'for', 'with', 'on', 'by', 'at', 'in', 'weighing', 'please', 'today', 'tomorrow', 'asap', 'and']);
const VERBS_AFTER_TO = new Set(['ship', 'send', 'carry', 'move', 'find', 'search', 'see', 'know', 'add', 'register', 'deliver', 'be']);

/** The first one- or two-word place after `preposition`, title-cased; skips "to" followed by a verb. */
function findPlace(text: string, preposition: 'from' | 'to'): string | undefined {
  for (const match of text.matchAll(new RegExp(String.raw`\b${preposition}\s+([\p{L}][\p{L}'-]*)(?:\s+([\p{L}][\p{L}'-]*))?`, 'giu'))) {
    const first = match[1]!;
    if (VERBS_AFTER_TO.has(first.toLowerCase()) || NOT_A_PLACE.has(first.toLowerCase())) continue;
    const second = match[2];
    const words =
      second && !NOT_A_PLACE.has(second.toLowerCase()) && !/^\d/.test(second) && !/^(kg|t|tons?|tonnes?)$/i.test(second) ? `${first} ${second}` : first;
    return titleCase(words);
  }
  return undefined;
}

function callTool(name: string, args: Record<string, unknown>): ScriptedReply {
  return { toolCalls: [{ name, arguments: args }] };
}

function lastUserText(call: ScriptedCall): string {
  for (let i = call.history.length - 1; i >= 0; i -= 1) {
    const item = call.history[i];
    if (item?.type === 'message' && item.role === 'user') return item.content;
  }
  return '';
}

function bulletList(lines: string): string {
  return lines
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => `- ${line}`)
    .join('\n');
}

function titleCase(words: string): string {
  return words.replace(/\p{L}+/gu, (word) => word[0]!.toUpperCase() + word.slice(1));
}

function joinWords(parts: readonly string[]): string {
  if (parts.length <= 1) return parts.join('');
  return `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}
