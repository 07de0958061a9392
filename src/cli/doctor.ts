import type { PalaverConfig } from '../config/index.js';
import { createPalaver } from '../app.js';
import { DEFAULT_OPENAI_BASE_URL, isLocalEndpoint } from '../models/api-key-policy.js';
import { silentLogger } from '../observability/logger.js';
import { openStore } from '../store/index.js';
import { startDemo, type Demo } from './demo.js';
import { redactUrl } from './redact-url.js';

type Check = { ok: true; detail: string } | { ok: false; detail: string };

/**
 * `palaver doctor`: checks config, database, model endpoint, tools and (with `tools.dispatch: "streams"`) Redis and
 * the tool workers, printing one line per check in plain
 * words. Resolves false when something is wrong.
 */
export async function runDoctor(
  options: { demo?: boolean },
  deps: { loadConfig: (overrides?: Record<string, unknown>) => { config: PalaverConfig; file: string | undefined }; print?: (line: string) => void },
): Promise<boolean> {
  const print = deps.print ?? ((line: string) => console.log(line));
  const report = (name: string, check: Check) => print(`${check.ok ? '✔' : '✘'} ${name}: ${check.detail}`);
  let demo: Demo | undefined;
  let ok = true;
  try {
    let config: PalaverConfig;
    try {
      demo = options.demo ? await startDemo() : undefined;
      const loaded = deps.loadConfig(demo?.overrides);
      config = loaded.config;
      report('config', { ok: true, detail: loaded.file ? `read ${loaded.file}` : 'no config file; using defaults and environment' });
    } catch (error) {
      report('config', { ok: false, detail: (error as Error).message });
      return false;
    }

    const database = await checkDatabase(config.database.url);
    report('database', database);
    const model: Check =
      config.model.provider === 'scripted'
        ? {
            ok: true,
            detail: `the built-in scripted model, offline and without a key (${config.model.script ? `rules from ${config.model.script}` : 'it echoes each message'})`,
          }
        : await checkModelEndpoint(config);
    report('model', model);
    if (config.model.fallback && config.model.provider !== 'scripted')
      report('fallback model', await checkModelEndpoint({ ...config, model: { ...config.model, ...config.model.fallback } }));
    ok = database.ok && model.ok;
    if (config.tools.dispatch === 'streams') {
      const { checkToolStreams } = await import('./doctor-streams.js');
      for (const check of await checkToolStreams(config)) {
        report(check.name, check);
        ok &&= check.ok;
      }
    }

    if (database.ok) {
      const agent = await checkAgent(config, demo);
      report('agent', agent);
      ok &&= agent.ok;
    }
    return ok;
  } finally {
    await demo?.server.close();
  }
}

/** Starts the agent once (instructions, tools module, tool hosts) and lists what `diagnose` finds. */
async function checkAgent(config: PalaverConfig, demo: Demo | undefined): Promise<Check> {
  let palaver;
  try {
    palaver = await createPalaver(config, { logger: silentLogger(), ...(demo ? { tools: demo.toolsFor(config) } : {}) });
  } catch (error) {
    return { ok: false, detail: (error as Error).message };
  }
  try {
    const problems = await palaver.diagnose();
    return problems.length === 0
      ? { ok: true, detail: 'every role has instructions and every allowlisted tool is provided' }
      : { ok: false, detail: problems.join('; ') };
  } finally {
    await palaver.close();
  }
}

async function checkDatabase(url: string): Promise<Check> {
  try {
    const store = await openStore(url);
    try {
      await store.ping();
    } finally {
      await store.close();
    }
    return { ok: true, detail: `${redactUrl(url)} reachable, migrations applied` };
  } catch (error) {
    return { ok: false, detail: `cannot open ${redactUrl(url)}: ${(error as Error).message}. Check database.url or PALAVER_DB.` };
  }
}

/** Asks the endpoint for its model list: free, unlike a completion, and it proves address and key. */
async function checkModelEndpoint(config: PalaverConfig): Promise<Check> {
  const baseUrl = (config.model.baseUrl ?? DEFAULT_OPENAI_BASE_URL).replace(/\/+$/, '');
  if (config.model.apiKey === undefined && !isLocalEndpoint(baseUrl)) {
    return {
      ok: false,
      detail: `${baseUrl} needs an API key, and none is set: put it in PALAVER_LLM_API_KEY (model.apiKey), or use model.provider: scripted to try the agent offline.`,
    };
  }
  let response: Response;
  try {
    response = await fetch(`${baseUrl}/models`, {
      headers: config.model.apiKey ? { authorization: `Bearer ${config.model.apiKey}` } : {},
      signal: AbortSignal.timeout(Math.min(config.model.timeoutMs, 10_000)),
    });
  } catch (error) {
    return {
      ok: false,
      detail: `cannot reach ${baseUrl} (${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}). Check model.baseUrl or PALAVER_LLM_BASE_URL.`,
    };
  }
  if (response.status === 401 || response.status === 403) {
    return { ok: false, detail: `${baseUrl} refused the API key (HTTP ${response.status}). Check model.apiKey or PALAVER_LLM_API_KEY.` };
  }
  if (!response.ok)
    return { ok: true, detail: `${baseUrl} answers (HTTP ${response.status} on /models, which some servers do not offer); model ${config.model.name}` };
  const body = (await response.json().catch(() => undefined)) as { data?: { id?: string }[] } | undefined;
  const ids = body?.data?.map((entry) => entry.id).filter(Boolean) ?? [];
  if (ids.length > 0 && !ids.includes(config.model.name)) {
    return {
      ok: false,
      detail: `${baseUrl} answers, but does not list model "${config.model.name}" (it lists: ${ids.slice(0, 8).join(', ')}). Check model.name or PALAVER_MODEL.`,
    };
  }
  return { ok: true, detail: `${baseUrl} answers; model ${config.model.name} (${config.model.provider})` };
}
