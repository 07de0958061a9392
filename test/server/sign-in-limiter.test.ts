import { describe, expect, it } from 'vitest';
import { SignInLimiter } from '../../src/server/sign-in-limiter.js';

const WINDOW = 15 * 60 * 1000;

function failTimes(limiter: SignInLimiter, address: string, times: number): void {
  for (let attempt = 0; attempt < times; attempt += 1) limiter.fail(address);
}

describe('the sign-in limiter', () => {
  it('keeps a locked address locked however many other addresses fail after it', () => {
    let now = 0;
    const limiter = new SignInLimiter({ now: () => now });
    failTimes(limiter, '198.51.100.7', 5);
    expect(limiter.retryAfterSeconds('198.51.100.7')).toBe(900);
    // The attack run's flood: 10,050 failures from other addresses.
    for (let index = 0; index < 10_050; index += 1) limiter.fail(`10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`);
    now += 60_000;
    expect(limiter.retryAfterSeconds('198.51.100.7')).toBe(840);
  });

  it('once its table is full, counts new addresses together, so a flood of addresses cannot guess without end', () => {
    let now = 0;
    const limiter = new SignInLimiter({ maxAddresses: 100, now: () => now });
    for (let index = 0; index < 100; index += 1) limiter.fail(`10.0.0.${index}`);
    // Addresses already counted keep their own count: one more failure each is still allowed.
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    for (let index = 0; index < 5; index += 1) {
      expect(limiter.retryAfterSeconds(`10.0.1.${index}`)).toBe(0);
      limiter.fail(`10.0.1.${index}`);
    }
    expect(limiter.retryAfterSeconds('10.0.2.1')).toBe(900);
    expect(limiter.retryAfterSeconds('10.0.0.1')).toBe(0);
    // The window ends for everyone: new addresses have their own count again.
    now += WINDOW;
    expect(limiter.retryAfterSeconds('10.0.2.1')).toBe(0);
    limiter.fail('10.0.2.1');
    expect(limiter.retryAfterSeconds('10.0.2.2')).toBe(0);
  });

  it('counts an IPv6 /64 as one address (one host holds all of it)', () => {
    const limiter = new SignInLimiter({ maxFailures: 2 });
    limiter.fail('2001:db8:1:2::1');
    limiter.fail('2001:db8:1:2:ffff::9');
    expect(limiter.retryAfterSeconds('2001:db8:1:2:abcd::7')).toBeGreaterThan(0);
    expect(limiter.retryAfterSeconds('2001:db8:1:3::1')).toBe(0);
    expect(limiter.retryAfterSeconds('::ffff:192.0.2.1')).toBe(0);
  });
});
