import { Option } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { approvals, issuedOperatorToken } from '../../src/admin/api-contract.js';
import type { ApprovalDecider } from '../../src/domain/approval.js';
import { adminCommand } from '../../src/cli/admin.js';
import { requestApproval } from '../support/approval-request.js';
import { registerRunSecrets } from '../support/run-log.js';
import { createHarness, type Harness } from '../support/palaver-harness.js';
import { TEST_SECRETS } from '../support/secrets.js';

// Operators decide the tool calls that wait for an operator, through the admin API and `palaver admin approvals`,
// on a real SQLite store: requests are recorded as a waiting turn records them (`store.approvals.request`).

let harness: Harness | undefined;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await harness?.close();
  harness = undefined;
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

const ADMIN = TEST_SECRETS.adminToken;

async function start() {
  harness = await createHarness(() => ({ text: 'Noted.' }));
  const palaver = await harness.start({ server: { adminToken: ADMIN } });
  const server = await palaver.serve({ host: '127.0.0.1', port: 0 });
  cleanups.push(() => server.close());
  const call = async (token: string | undefined, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}/admin${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };
  const addOperator = async (name: string, role: 'operator' | 'admin' = 'operator') => {
    const added = await call(ADMIN, 'POST', '/operators', { name, role });
    expect(added.status).toBe(201);
    const { operator, token } = issuedOperatorToken.parse(added.body);
    registerRunSecrets([token]);
    return { id: operator.id, token };
  };
  /** A request in the person `name`'s conversation that `by` decides. */
  const request = (name: string, by: ApprovalDecider, tool: string, summary: string, requestedAt?: number) =>
    requestApproval(palaver, { name, by, tool, summary, ...(requestedAt === undefined ? {} : { requestedAt }) });
  return { palaver, server, call, addOperator, request };
}

describe('/admin/approvals', () => {
  it('lists requests newest first, and an operator approves one once: the second approval is told it was decided', async () => {
    const { palaver, call, addOperator, request } = await start();
    const dana = await addOperator('Dana');
    const older = await request('Olena', 'operator', 'refund', 'Refund 40 EUR to Olena', Date.now() - 60_000);
    const newer = await request('Ivo', 'person', 'cancel_booking', 'Cancel the booking of Friday 10:00');

    const listed = await call(dana.token, 'GET', '/approvals?status=pending');
    expect(listed.status).toBe(200);
    expect(approvals.safeParse(listed.body).success).toBe(true);
    expect(listed.body['approvals'].map((a: { id: string }) => a.id)).toEqual([newer.id, older.id]);
    expect(listed.body['approvals'][1]).toEqual({
      id: older.id,
      tool: 'refund',
      summary: 'Refund 40 EUR to Olena',
      by: 'operator',
      status: 'pending',
      sessionId: older.sessionId,
      userId: older.userId,
      channel: 'api',
      conversationId: 'olena',
      requestedAt: older.requestedAt.toISOString(),
      expiresAt: older.expiresAt.toISOString(),
      decidedAt: null,
      decidedBy: null,
      reason: null,
    });

    expect(await call(dana.token, 'POST', `/approvals/${older.id}/approve`)).toEqual({ status: 200, body: { id: older.id, status: 'approved' } });
    const again = await call(ADMIN, 'POST', `/approvals/${older.id}/approve`);
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ status: 'approved', error: { code: 'conflict', message: expect.stringContaining('already approved') } });

    // Decided by Dana, in the request and in the operators' audit; only the person's request still waits.
    expect(await palaver.store.approvals.get(older.id)).toMatchObject({ status: 'approved', decidedBy: 'Dana', decidedAt: expect.any(Date) });
    const audit = await call(ADMIN, 'GET', '/actions');
    expect(audit.body['actions'][0]).toMatchObject({
      action: 'approval',
      actor: 'Dana',
      operatorId: dana.id,
      sessionId: older.sessionId,
      details: { approvalId: older.id, tool: 'refund', shown: 'Refund 40 EUR to Olena', decision: 'approved', reason: null },
    });
    expect((await call(dana.token, 'GET', '/approvals?status=pending')).body['approvals'].map((a: { id: string }) => a.id)).toEqual([newer.id]);
    expect((await call(dana.token, 'GET', '/approvals?status=approved')).body['approvals']).toMatchObject([{ id: older.id, decidedBy: 'Dana' }]);
    expect((await call(dana.token, 'GET', '/approvals?limit=1')).body['approvals']).toHaveLength(1);
    expect((await call(dana.token, 'GET', '/approvals?status=maybe')).status).toBe(400);
  });

  it("declines with a reason, refuses a person's request, an expired one and an unknown id, and wants credentials", async () => {
    const { palaver, call, request } = await start();
    const refund = await request('Olena', 'operator', 'refund', 'Refund 40 EUR to Olena');
    const cancel = await request('Ivo', 'person', 'cancel_booking', 'Cancel the booking of Friday 10:00');

    expect((await call(ADMIN, 'POST', `/approvals/${refund.id}/decline`, { reason: '' })).status).toBe(400);
    expect((await call(ADMIN, 'POST', `/approvals/${refund.id}/decline`, 'not json')).status).toBe(400);
    const declined = await call(ADMIN, 'POST', `/approvals/${refund.id}/decline`, { reason: 'over the refund limit' });
    expect(declined).toEqual({ status: 200, body: { id: refund.id, status: 'declined' } });
    expect(await palaver.store.approvals.get(refund.id)).toMatchObject({ status: 'declined', decidedBy: 'admin', reason: 'over the refund limit' });
    const approveLate = await call(ADMIN, 'POST', `/approvals/${refund.id}/approve`);
    expect(approveLate).toMatchObject({ status: 409, body: { status: 'declined' } });

    const refused = await call(ADMIN, 'POST', `/approvals/${cancel.id}/approve`);
    expect(refused.status).toBe(403);
    expect(refused.body['error']['message']).toContain("the person's to decide");
    expect(await palaver.store.approvals.get(cancel.id)).toMatchObject({ status: 'pending', decidedBy: null });

    // Out of time before anyone decided: the expiry is taken now, and counts as declined.
    const late = await request('Mira', 'operator', 'voucher', 'Send a voucher to Mira', Date.now() - 2 * 3_600_000);
    expect(await call(ADMIN, 'POST', `/approvals/${late.id}/approve`)).toMatchObject({ status: 409, body: { status: 'expired' } });
    expect(await palaver.store.approvals.get(late.id)).toMatchObject({ status: 'expired', decidedBy: 'expiry' });

    expect((await call(ADMIN, 'POST', '/approvals/no-such-request/decline')).status).toBe(404);
    expect((await call(undefined, 'POST', `/approvals/${cancel.id}/approve`)).status).toBe(401);
    expect((await call('wrong-token', 'GET', '/approvals')).status).toBe(401);
  });

  it('an operator of the operator role decides too; the routes beside them stay closed to that role', async () => {
    const { call, addOperator, request } = await start();
    const dana = await addOperator('Dana');
    const refund = await request('Olena', 'operator', 'refund', 'Refund 40 EUR to Olena');
    // Deciding is an operator's work, but the operator role still may not do an admin's (here: add an operator).
    expect((await call(dana.token, 'POST', '/operators', { name: 'Mallory' })).status).toBe(403);
    expect((await call(dana.token, 'POST', `/approvals/${refund.id}/approve/extra`)).status).toBe(403);
    expect((await call(dana.token, 'POST', `/approvals/${refund.id}/decline`)).body).toEqual({ id: refund.id, status: 'declined' });
  });
});

describe('palaver admin approvals', () => {
  it('lists, approves and declines with a reason, and exits 3 when the request was decided already', async () => {
    const { palaver, server, request } = await start();
    const refund = await request('Olena', 'operator', 'refund', 'Refund 40 EUR\nto Olena');
    const voucher = await request('Ivo', 'operator', 'voucher', 'Send a 10 EUR voucher to Ivo');
    vi.stubEnv('PALAVER_ADMIN_TOKEN', ADMIN);
    const printed: string[] = [];
    const errors: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => printed.push(String(chunk)) > 0);
    vi.spyOn(console, 'error').mockImplementation((message) => void errors.push(String(message)));
    const run = async (...args: string[]) => {
      process.exitCode = undefined;
      await adminCommand(() => new Option('-c, --config <file>')).parseAsync(['--url', server.url, '--actor', 'Dana', ...args], { from: 'user' });
      const code = process.exitCode;
      process.exitCode = undefined;
      return { code, out: printed.splice(0).join('') };
    };

    const table = await run('approvals');
    expect(table.code).toBeUndefined();
    expect(table.out).toMatch(/^ID +TOOL +SUMMARY +BY +STATUS +CHANNEL +REQUESTED +EXPIRES +DECIDED BY\n/);
    expect(table.out).toContain('Refund 40 EUR to Olena');
    expect(table.out).toMatch(/\n\n2 waiting for an operator: palaver admin approvals approve <id>/);

    expect(await run('approvals', 'approve', refund.id)).toEqual({
      code: undefined,
      out: `Approved ${refund.id}: the tool runs once, and the agent answers with its result.\n`,
    });
    expect(await run('approvals', 'decline', voucher.id, '--reason', 'not this month')).toEqual({
      code: undefined,
      out: `Declined ${voucher.id}: the tool does not run, and the agent is told so.\n`,
    });
    expect(await palaver.store.approvals.get(voucher.id)).toMatchObject({ status: 'declined', decidedBy: 'Dana', reason: 'not this month' });

    expect((await run('approvals', 'approve', refund.id)).code).toBe(3);
    expect(errors.pop()).toContain('already approved');
    expect((await run('approvals', 'decline', 'no-such-request')).code).toBe(2);

    const json = await run('--json', 'approvals', '--status', 'declined');
    expect(JSON.parse(json.out)).toMatchObject({ approvals: [{ id: voucher.id, status: 'declined', reason: 'not this month', decidedBy: 'Dana' }] });
    expect((await run('approvals', '--status', 'pending')).out).toBe('No approval requests pending.\n');
  });
});
