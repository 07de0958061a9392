import { isIP } from 'node:net';

/**
 * The group a client address is counted in by the limits (admin sign-in, web runs and conversations): an IPv4 address
 * as it is (also written IPv4-mapped, `::ffff:192.0.2.1`), an IPv6 address by its first 64 bits, since a household or
 * a host gets a /64 at least and counting single IPv6 addresses would limit nothing. Anything else as it is.
 */
export function addressGroup(address: string): string {
  const lower = address.split('%')[0]!.toLowerCase();
  const mapped = lower.startsWith('::ffff:') ? lower.slice('::ffff:'.length) : lower;
  if (isIP(mapped) === 4) return mapped;
  if (isIP(lower) !== 6) return address;
  const [head = '', tail = ''] = lower.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = lower.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  // A trailing dotted IPv4 part (`64:ff9b::192.0.2.1`) fills two groups.
  if (right.at(-1)?.includes('.') === true) right.push('0');
  const groups = lower.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
