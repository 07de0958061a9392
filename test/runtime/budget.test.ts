import { describe, expect, it } from 'vitest';
import { dayIn, reservationOf } from '../../src/runtime/budget.js';

describe('budget reservation amount', () => {
  it('is reservePerTurn when configured', () => {
    expect(reservationOf({ perUserPerDay: '2', reservePerTurn: '0.35', currency: 'USD' })).toBe('0.35');
  });

  it('defaults to a twentieth of the smallest cap, rounded up to the store\'s 10 places', () => {
    expect(reservationOf({ perUserPerDay: '2', perSession: '0.5', currency: 'USD' })).toBe('0.025');
    expect(reservationOf({ perSession: '3', currency: 'USD' })).toBe('0.15');
    expect(reservationOf({ perUserPerDay: '0.0000000021', currency: 'USD' })).toBe('0.0000000002');
  });

  it('is never zero, so a cap of 0 (or one already reached) admits no turn', () => {
    expect(reservationOf({ perUserPerDay: '0', currency: 'USD' })).toBe('0.0000000001');
  });
});

describe('the budget day', () => {
  it('is the calendar day in the user\'s time zone', () => {
    const at = new Date('2026-03-01T23:30:00Z');
    expect(dayIn('UTC', at)).toBe('2026-03-01');
    expect(dayIn('Asia/Shanghai', at)).toBe('2026-03-02');
    expect(dayIn('America/New_York', at)).toBe('2026-03-01');
  });
});
