import { Hono } from 'hono';
import type { Palaver, PalaverOptions } from '../app.js';
import { startHttpServer } from '../server/http-server.js';
import { readAgentFiles, watchTargets, type AgentFiles } from './agent-files.js';
import { watchFiles, type StopWatching } from './file-watcher.js';
import { playgroundRoutes } from './playground/playground-routes.js';
import { TurnRecorder } from './turn-recorder.js';

/** What `palaver dev` runs with. */
export interface DevServerOptions {
  /** The config file (`--config`); default: found as `palaver start` finds it. */
  readonly configFile?: string;
  /** Folder the config is looked for in and relative paths start from (default: the working folder). */
  readonly cwd?: string;
  /** Port on 127.0.0.1 (default: `server.port`; 0 picks a free one). */
  readonly port?: number;
  /** How long changes must be quiet before a reload (default 150 ms). */
  readonly debounceMs?: number;
  /** One readable line per event: started, reloaded, a reload refused. Default: stdout/stderr. */
  readonly report?: (line: string, level: 'info' | 'error') => void;
  /** Settings laid over the config file's at every (re)load, e.g. `channels.telegram` of the Telegram sandbox. */
  readonly overrides?: Record<string, unknown>;
  /** Passed to every Palaver built (tests give a logger). */
  readonly palaverOptions?: Omit<PalaverOptions, 'tools' | 'observer'>;
}

/** A running `palaver dev`. */
export interface DevServer {
  /** e.g. `http://127.0.0.1:3000`; the playground is at `${url}/dev`. */
  readonly url: string;
  /** The agent running now (undefined while a reload replaces it, or when the last good files could not start). */
  readonly palaver: Palaver | undefined;
  /** The files of the agent that runs (or last ran). */
  readonly files: AgentFiles;
  /** Reads the files again and replaces the agent; resolves false (the old agent kept) when they are invalid. */
  reload(): Promise<boolean>;
  /** Stops watching, the agent and the HTTP server. Safe to call twice. */
  close(): Promise<void>;
}

interface RunningAgent {
  readonly files: AgentFiles;
  readonly palaver: Palaver;
  readonly app: Hono;
}

const HOST = '127.0.0.1';

/**
 * Runs the agent the config describes, as `palaver start` does but on loopback only, and replaces it whenever its
 * instructions, config, offline model rules or tools module change: the new files are read and checked first, and
 * only when they are valid is the running agent closed and a new one built on the same database (conversations go
 * on). Invalid files are reported and the old agent keeps answering. One HTTP server stays up across reloads and
 * hands each request to the agent of the moment; it also serves the playground at `/dev`.
 * @throws ConfigError when the files are invalid at start (there is no older agent to keep).
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cwd = options.cwd ?? process.cwd();
  const report = options.report ?? ((line, level) => (level === 'error' ? console.error(line) : console.log(line)));
  const recorder = new TurnRecorder();
  const { createPalaver } = await import('../app.js');

  const build = async (files: AgentFiles): Promise<RunningAgent> => {
    const palaver = await createPalaver(files.config, { ...options.palaverOptions, tools: files.tools, observer: recorder, cwd });
    try {
      return { files, palaver, app: await palaver.httpApp({ host: HOST }) };
    } catch (error) {
      await palaver.close({ graceMs: 0 });
      throw error;
    }
  };

  let current: RunningAgent | undefined = await build(await readAgentFiles({ cwd, fresh: false, overrides: options.overrides, ...configFileOf(options) }));
  let stopWatching: StopWatching = () => {};
  let reloading: Promise<boolean> = Promise.resolve(true);
  let lastGood = current.files;
  let closed = false;

  const watchAgent = (files: AgentFiles) => {
    stopWatching();
    stopWatching = watchFiles(watchTargets(files, cwd), (changed) => void reload(changed), {
      debounceMs: options.debounceMs ?? 150,
      onError: (error, dir) => report(`Cannot watch ${dir} (${error.message}): its changes need a restart of palaver dev.`, 'error'),
    });
  };

  /** One reload at a time: a change during a reload waits for it, then reads the files as they are by then. */
  const reload = (changed: readonly string[] = []): Promise<boolean> => {
    reloading = reloading.then(() => (closed ? false : replace(changed)));
    return reloading;
  };

  const replace = async (changed: readonly string[]): Promise<boolean> => {
    const started = Date.now();
    const what = changed.length === 0 ? 'files' : changed.map((file) => relativeName(file, cwd)).join(', ');
    let files: AgentFiles;
    try {
      files = await readAgentFiles({ cwd, fresh: true, overrides: options.overrides, ...configFileOf(options) });
    } catch (error) {
      report(`Reload refused (${what}): ${messageOf(error)}\nThe agent keeps running as before; fix the file and save it again.`, 'error');
      return false;
    }
    const previous = current;
    current = undefined;
    await previous?.palaver.close({ graceMs: previous.palaver.config.server.shutdownGraceMs });
    try {
      current = await build(files);
    } catch (error) {
      report(`Reload failed (${what}): ${messageOf(error)}\nStarting the agent as it was before…`, 'error');
      try {
        current = await build(lastGood);
        report('The agent runs as before the change; fix the file and save it again.', 'error');
      } catch (again) {
        report(`The agent could not start again either (${messageOf(again)}); it stays stopped until the files are fixed.`, 'error');
      }
      return false;
    }
    lastGood = files;
    watchAgent(files);
    report(`Reloaded after a change to ${what} in ${Date.now() - started} ms (${summary(files)})`, 'info');
    return true;
  };

  const app = new Hono();
  app.route('/dev', playgroundRoutes({ recorder, agent: () => current?.palaver }));
  app.all('*', (c) => {
    const agent = current;
    if (agent === undefined) return c.text('The agent is restarting or stopped: see the palaver dev terminal.', 503, { 'retry-after': '1' });
    return agent.app.fetch(c.req.raw, c.env);
  });

  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer(app, { host: HOST, port: options.port ?? current.palaver.config.server.port });
  } catch (error) {
    await current.palaver.close({ graceMs: 0 });
    throw error;
  }
  watchAgent(current.files);

  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    get palaver() {
      return current?.palaver;
    },
    get files() {
      return lastGood;
    },
    reload: () => reload(),
    close() {
      closing ??= (async () => {
        closed = true;
        stopWatching();
        await server.close();
        await reloading;
        await current?.palaver.close();
      })();
      return closing;
    },
  };
}

/** `roles: guest, member; tools: opening_hours`: what the agent now has. */
export function summary(files: AgentFiles): string {
  const roles = Object.keys(files.config.roles.definitions);
  const tools = files.tools.map((tool) => tool.name);
  return `roles: ${roles.length > 0 ? roles.join(', ') : 'none'}; tools: ${tools.length > 0 ? tools.join(', ') : 'none'}`;
}

function configFileOf(options: DevServerOptions): { configFile?: string } {
  return options.configFile === undefined ? {} : { configFile: options.configFile };
}

function relativeName(file: string, cwd: string): string {
  return file.startsWith(`${cwd}/`) ? file.slice(cwd.length + 1) : file;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
