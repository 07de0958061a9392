import { basename, dirname, extname, relative, resolve } from 'node:path';
import { loadConfig, type PalaverConfig } from '../config/index.js';
import { loadReplyRules } from '../models/scripted/reply-rules.js';
import { loadInstructionLibrary } from '../runtime/context/instructions.js';
import { loadToolsModule } from '../tool-hosts.js';
import type { LocalTool } from '../tools/define-tool.js';
import type { WatchTarget } from './file-watcher.js';

/** What an agent is made of on disk, read and checked: the config, with the tools of its tools module loaded. */
export interface AgentFiles {
  /** The config, its `agent.toolsModule` left out: its tools are in `tools`, loaded afresh at each reload. */
  readonly config: PalaverConfig;
  readonly tools: readonly LocalTool[];
  /** The config file, when there is one. */
  readonly file: string | undefined;
  /** The tools module's path, when the config names one. */
  readonly toolsModule: string | undefined;
}

/**
 * Reads the config as `palaver start` does and checks every file a Palaver reads at start-up — the instructions
 * folder, the offline model's rules, the tools module — so that a broken one is found before the running agent is
 * stopped. `fresh` imports the tools module again though this process loaded it before.
 * @throws ConfigError (or the tools module's own error) naming what is wrong.
 */
export async function readAgentFiles(options: {
  readonly configFile?: string;
  readonly cwd: string;
  readonly fresh: boolean;
  /** Settings laid over the file's (e.g. the Telegram sandbox's bot token and address). */
  readonly overrides?: Record<string, unknown> | undefined;
}): Promise<AgentFiles> {
  const { config, file } = loadConfig({
    cwd: options.cwd,
    ...(options.configFile === undefined ? {} : { file: options.configFile }),
    ...(options.overrides === undefined ? {} : { overrides: options.overrides }),
  });
  loadInstructionLibrary(config.agent.instructionsDir);
  if (config.model.provider === 'scripted' && config.model.script !== undefined) loadReplyRules(config.model.script);
  const { toolsModule, ...agent } = config.agent;
  const tools = toolsModule === undefined ? [] : await loadToolsModule(toolsModule, { fresh: options.fresh });
  return { config: { ...config, agent }, tools, file, toolsModule };
}

/** Files whose change is worth a reload: source code and text, never a database, a log or an installed package. */
const SOURCE = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.json', '.md', '.yaml', '.yml']);

/**
 * The folders `palaver dev` watches for an agent: the config file's, the instructions folder, the tools module's
 * folder (recursive, for the files it imports, unless it is the project's own folder, where only the module counts)
 * and the offline model's rules file.
 */
export function watchTargets(agent: AgentFiles, cwd: string): WatchTarget[] {
  const exact = new Map<string, Set<string>>();
  const addFile = (path: string) => {
    const dir = dirname(path);
    exact.set(dir, (exact.get(dir) ?? new Set()).add(basename(path)));
  };
  if (agent.file !== undefined) addFile(agent.file);
  const { script } = agent.config.model;
  if (agent.config.model.provider === 'scripted' && script !== undefined) addFile(script);
  const projectDir = agent.file === undefined ? resolve(cwd) : dirname(agent.file);
  const targets: WatchTarget[] = [{ dir: agent.config.agent.instructionsDir, recursive: false, accepts: (name) => extname(name) === '.md' }];
  if (agent.toolsModule !== undefined) {
    const toolsDir = dirname(agent.toolsModule);
    // A folder that holds the project's holds node_modules and data/: only the module itself counts there.
    if (!relative(toolsDir, projectDir).startsWith('..')) addFile(agent.toolsModule);
    else targets.push({ dir: toolsDir, recursive: true, accepts: (name) => SOURCE.has(extname(name)) && !name.split('/').includes('node_modules') });
  }
  for (const [dir, names] of exact) {
    const already = targets.find((target) => target.dir === dir);
    if (already) targets[targets.indexOf(already)] = { ...already, accepts: (name) => names.has(name) || already.accepts(name) };
    else targets.push({ dir, recursive: false, accepts: (name) => names.has(name) });
  }
  return targets;
}
