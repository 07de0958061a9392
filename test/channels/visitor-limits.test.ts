import { describe, expect, it } from 'vitest';
import { VisitorLimits } from '../../src/channels/web/visitor-limits.js';
import { addressGroup } from '../../src/platform/address-group.js';

const LIMITS = { runsPerVisitor: 2, runsPerAddress: 3, newConversationsPerHourPerVisitor: 2, newConversationsPerHourPerAddress: 3 };
const isNew = async (): Promise<boolean> => false;

describe('VisitorLimits', () => {
  it('gives a run slot back once, and counts a visitor’s and an address’s runs apart', () => {
    const limits = new VisitorLimits(LIMITS);
    const a1 = limits.openRun('visitor:a', '10.0.0.1');
    const a2 = limits.openRun('visitor:a', '10.0.0.1');
    expect(limits.openRun('visitor:a', '10.0.0.1')).toMatchObject({ ok: false, limit: 'runs', scope: 'visitor' });
    expect(limits.openRun('visitor:b', '10.0.0.1').ok).toBe(true);
    expect(limits.openRun('visitor:c', '10.0.0.1')).toMatchObject({ ok: false, limit: 'runs', scope: 'address' });
    expect(limits.openRun('visitor:c', '10.0.0.2').ok).toBe(true);
    if (!a1.ok || !a2.ok) throw new Error('admitted above');
    a1.release();
    a1.release();
    // One slot back for the visitor and the address, not two.
    expect(limits.openRun('visitor:c', '10.0.0.1').ok).toBe(true);
    expect(limits.openRun('visitor:d', '10.0.0.1').ok).toBe(false);
  });

  it('counts new conversations in a sliding hour: the oldest frees a place an hour after it started', async () => {
    let now = 1_000_000;
    const limits = new VisitorLimits(LIMITS, () => now);
    expect((await limits.startConversation('visitor:a', '10.0.0.1', 't1', isNew)).ok).toBe(true);
    now += 30 * 60_000;
    expect((await limits.startConversation('visitor:a', '10.0.0.1', 't2', isNew)).ok).toBe(true);
    // Known conversations pass without asking the store.
    expect((await limits.startConversation('visitor:a', '10.0.0.1', 't1', () => Promise.reject(new Error('not asked')))).ok).toBe(true);
    const refused = await limits.startConversation('visitor:a', '10.0.0.1', 't3', isNew);
    expect(refused).toMatchObject({ ok: false, limit: 'conversations', scope: 'visitor', retryAfterSeconds: 30 * 60 });
    now += 30 * 60_000 + 1;
    expect((await limits.startConversation('visitor:a', '10.0.0.1', 't3', isNew)).ok).toBe(true);
  });

  it('limits an address’s new conversations across its visitors, and lets a refused message’s conversation be taken back', async () => {
    const limits = new VisitorLimits(LIMITS, () => 5_000_000);
    expect((await limits.startConversation('visitor:a', '2001:db8:1:2::1', 'a1', isNew)).ok).toBe(true);
    const taken = await limits.startConversation('visitor:b', '2001:db8:1:2:ffff::9', 'b1', isNew);
    expect(taken.ok).toBe(true);
    expect((await limits.startConversation('visitor:c', '2001:db8:1:2::77', 'c1', isNew)).ok).toBe(true);
    // Another address in the same /64: the same household.
    expect(await limits.startConversation('visitor:d', '2001:db8:1:2:3:4:5:6', 'd1', isNew)).toMatchObject({ ok: false, scope: 'address' });
    if (!taken.ok) throw new Error('admitted above');
    taken.undo();
    expect((await limits.startConversation('visitor:d', '2001:db8:1:2:3:4:5:6', 'd1', isNew)).ok).toBe(true);
    // At the limit, a conversation the store has (continued after a restart) passes uncounted.
    expect((await limits.startConversation('visitor:e', '2001:db8:1:2::5', 'e-old', async () => true)).ok).toBe(true);
  });

  it('groups IPv6 addresses by /64 and IPv4-mapped ones as IPv4', () => {
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressGroup('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64');
    expect(addressGroup('2001:0db8:0000:0001:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:0:1::/64');
    expect(addressGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('::1')).toBe('0:0:0:0::/64');
  });
});
