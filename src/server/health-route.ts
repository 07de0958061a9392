import type { Handler } from 'hono';
import type { Logger } from '../observability/logger.js';

/** One dependency's state, e.g. `{ database: { ok: true } }` or `{ redis: { ok: false, detail: 'timeout' } }`. */
export interface HealthCheck {
  readonly ok: boolean;
  readonly detail?: string;
}

/** Reports the state of each dependency by name. Should not throw; if it does, the server reports `degraded`. */
export type HealthProbe = () => Promise<Record<string, HealthCheck>>;

export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly checks: Record<string, HealthCheck>;
}

export interface HealthRouteOptions {
  readonly health: HealthProbe;
  readonly logger: Logger;
  /** A probe slower than this counts as failed, so a hung database cannot hang the health endpoint. Default 5000 ms. */
  readonly timeoutMs?: number;
}

/** `GET /health`: 200 `{ status: 'ok', checks }` when every check is ok, 503 with `status: 'degraded'` otherwise. */
export function healthRoute(options: HealthRouteOptions): Handler {
  const timeoutMs = options.timeoutMs ?? 5000;
  return async (c) => {
    const report = await runHealth(options.health, timeoutMs, options.logger);
    return c.json(report, report.status === 'ok' ? 200 : 503);
  };
}

/** Runs the probe with a time limit and folds its answer into a report; never throws. */
export async function runHealth(probe: HealthProbe, timeoutMs: number, logger: Logger): Promise<HealthReport> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`health checks took longer than ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const checks = await Promise.race([probe(), timeout]);
    const ok = Object.values(checks).every((check) => check.ok);
    return { status: ok ? 'ok' : 'degraded', checks };
  } catch (error) {
    logger.warn({ err: error }, 'health probe failed');
    const detail = error instanceof Error && error.message.startsWith('health checks took') ? error.message : 'the health probe failed; see the server log';
    return { status: 'degraded', checks: { health: { ok: false, detail } } };
  } finally {
    clearTimeout(timer);
  }
}
