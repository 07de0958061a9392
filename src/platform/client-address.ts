import { BlockList, isIP } from 'node:net';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';
import { PalaverError } from '../domain/errors.js';

/** The address of the client behind a request, or undefined when there is no socket (`app.request()` in tests). */
export type ClientAddress = (c: Context) => string | undefined;

/**
 * How to learn a request's client address. The socket's peer is the client, unless the peer is one of
 * `trustedProxies` (`server.trustedProxies`: addresses or CIDR ranges): then the client is the right-most address in
 * `X-Forwarded-For` that is not itself a trusted proxy. A proxy appends the address it saw to the header, so what
 * stands right of the last trusted hop was written by a trusted proxy; anything further left the client could forge.
 * From any other peer the header is ignored.
 *
 * @throws PalaverError `invalid_config` for an entry that is neither an IP address nor a CIDR range.
 */
export function clientAddressResolver(trustedProxies: readonly string[] = []): ClientAddress {
  if (trustedProxies.length === 0) return peerAddress;
  const trusted = new BlockList();
  for (const entry of trustedProxies) addTrusted(trusted, entry);
  const isTrusted = (address: string): boolean => {
    const plain = unmapped(address);
    const family = isIP(plain);
    return family !== 0 && trusted.check(plain, family === 4 ? 'ipv4' : 'ipv6');
  };
  return (c) => {
    const peer = peerAddress(c);
    if (peer === undefined || !isTrusted(peer)) return peer;
    const hops = (c.req.header('x-forwarded-for') ?? '')
      .split(',')
      .map((hop) => hop.trim())
      .filter((hop) => hop !== '');
    for (let index = hops.length - 1; index >= 0; index -= 1) {
      const hop = hops[index]!;
      if (isIP(unmapped(hop)) === 0) return peer; // a proxy that writes something else is not one to follow
      if (!isTrusted(hop)) return hop;
    }
    return peer;
  };
}

function addTrusted(list: BlockList, entry: string): void {
  const [address = '', prefix, extra] = entry.trim().split('/');
  const family = isIP(unmapped(address));
  const bits = prefix === undefined ? undefined : Number(prefix);
  const maxBits = family === 4 ? 32 : 128;
  if (family === 0 || extra !== undefined || (bits !== undefined && !(Number.isInteger(bits) && bits >= 0 && bits <= maxBits))) {
    throw new PalaverError('invalid_config', `server.trustedProxies: "${entry}" is not an IP address or a CIDR range (e.g. 10.0.0.0/8).`);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) list.addAddress(unmapped(address), type);
  else list.addSubnet(unmapped(address), bits, type);
}

/** `::ffff:192.0.2.1` as `192.0.2.1`: Node reports IPv4 peers on a dual-stack socket that way. */
function unmapped(address: string): string {
  const lower = address.toLowerCase();
  return lower.startsWith('::ffff:') && isIP(lower.slice(7)) === 4 ? lower.slice(7) : lower;
}

function peerAddress(c: Context): string | undefined {
  try {
    return getConnInfo(c).remote.address;
  } catch {
    // No Node socket behind this request (app.request(), another runtime).
    return undefined;
  }
}
