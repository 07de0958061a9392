import type { ClusterMessage, ClusterTopic } from '../domain/ports/cluster-bus.js';
import { CLUSTER_TOPIC_PATTERN, MAX_CLUSTER_MESSAGE_BYTES } from '../domain/ports/cluster-bus.js';

/** What travels on the wire: the message and the process that published it. */
interface Envelope {
  readonly from: string;
  readonly message: ClusterMessage;
}

/** The longest process id a received envelope may carry; anything longer is not one of ours. */
const MAX_PROCESS_ID_CHARS = 100;

/**
 * The text a bus sends for `message`, stamped with `from`.
 * @throws Error when the topic is not a lower-case name, or the message is not a JSON object or is too large.
 */
export function encodeEnvelope(topic: ClusterTopic, message: ClusterMessage, from: string): string {
  checkTopic(topic);
  if (message === null || typeof message !== 'object' || Array.isArray(message)) throw new Error(`A cluster message on "${topic}" must be a JSON object.`);
  const text = JSON.stringify(message);
  if (Buffer.byteLength(text) > MAX_CLUSTER_MESSAGE_BYTES) {
    throw new Error(`A cluster message on "${topic}" is larger than ${MAX_CLUSTER_MESSAGE_BYTES} bytes; send an id and read the content from the store.`);
  }
  return `{"from":${JSON.stringify(from)},"message":${text}}`;
}

/**
 * The envelope in `text`, or undefined when it is not one: anyone who can reach the database or Redis can publish on
 * the channel, so what arrives is checked before a listener sees it.
 */
export function decodeEnvelope(text: string): Envelope | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const { from, message } = parsed as Record<string, unknown>;
  if (typeof from !== 'string' || from.length === 0 || from.length > MAX_PROCESS_ID_CHARS) return undefined;
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return undefined;
  return { from, message: message as ClusterMessage };
}

/** @throws Error naming the rule when `topic` cannot be a channel name. */
export function checkTopic(topic: ClusterTopic): void {
  if (!CLUSTER_TOPIC_PATTERN.test(topic))
    throw new Error(`"${topic}" is not a cluster topic: lower-case letters, digits and _, starting with a letter, at most 40.`);
}
