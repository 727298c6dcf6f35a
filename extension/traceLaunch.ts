/**
 * A Python launch configuration (`.vscode/launch.json`, type `debugpy` or `python`, request
 * `launch`) as the command "Trace Python File" runs it under `commcost trace`: the program or
 * module with its arguments, working folder, environment and interpreter. Pure: no `vscode`
 * import; launch.json is the user's file, read as untrusted input (every field checked).
 */

/** The variables substituted in a configuration's strings (absolute paths). */
export interface LaunchVariables {
  workspaceFolder: string;
  /** The active editor's file, when there is one. */
  file?: string;
  /** The Python to use when the configuration names none. */
  python: string;
}

/** What to run: the command line, its folder and the variables it adds. */
export interface LaunchCommand {
  name: string;
  command: string[];
  cwd: string;
  env: Record<string, string>;
}

const TYPES = new Set(['debugpy', 'python']);

/** Whether `config` is a Python launch configuration this command can run (type and request). */
export function isPythonLaunch(config: unknown): config is Record<string, unknown> {
  if (!config || typeof config !== 'object' || Array.isArray(config)) return false;
  const c = config as Record<string, unknown>;
  return TYPES.has(c.type as string) && c.request === 'launch' && typeof c.name === 'string';
}

/**
 * Substitutes `${workspaceFolder}`, `${file}`, `${fileDirname}`, `${fileBasename}`, `${env:NAME}`
 * (from `env`) in `text`.
 * @throws Error naming a variable this command does not substitute (e.g. `${command:…}`, `${input:…}`)
 */
export function substitute(text: string, v: LaunchVariables, env: NodeJS.ProcessEnv = {}): string {
  return text.replace(/\$\{([^}]*)\}/g, (whole, name: string) => {
    if (name === 'workspaceFolder' || name === 'workspaceRoot') return v.workspaceFolder;
    if (name.startsWith('env:')) return env[name.slice(4)] ?? '';
    const file = v.file;
    if (file && name === 'file') return file;
    if (file && name === 'fileDirname') return file.replace(/[\\/][^\\/]*$/, '') || '/';
    if (file && name === 'fileBasename') return file.split(/[\\/]/).pop() ?? file;
    throw new Error(`uses ${whole}, which "Trace Python File" does not substitute`);
  });
}

/**
 * The command line of a Python launch configuration: `python program args…` or `python -m module
 * args…` (`python` from the configuration's `python`, else `v.python`), in its `cwd` (default the
 * workspace folder), with its `env` (strings only).
 * @throws Error (message for the user) for a configuration without program or module, a field of
 *   the wrong type, or a variable that is not substituted
 */
export function launchCommand(config: Record<string, unknown>, v: LaunchVariables, env: NodeJS.ProcessEnv = {}): LaunchCommand {
  const name = String(config.name);
  const sub = (x: string) => substitute(x, v, env);
  const str = (k: string): string | undefined => {
    const x = config[k];
    if (x === undefined) return undefined;
    if (typeof x !== 'string') throw new Error(`"${k}" must be a string`);
    return sub(x);
  };
  const program = str('program');
  const module = str('module');
  if (!program && !module) throw new Error('has neither "program" nor "module"');
  let args: string[] = [];
  const a = config.args;
  if (typeof a === 'string') args = a.split(/\s+/).filter(Boolean).map(sub);
  else if (Array.isArray(a) && a.every((x) => typeof x === 'string')) args = a.map(sub);
  else if (a !== undefined) throw new Error('"args" must be a list of strings');
  const e = config.env;
  const extra: Record<string, string> = {};
  if (e !== undefined) {
    if (!e || typeof e !== 'object' || Array.isArray(e)) throw new Error('"env" must be an object of strings');
    for (const [k, x] of Object.entries(e)) {
      if (typeof x !== 'string') throw new Error(`"env.${k}" must be a string`);
      extra[k] = sub(x);
    }
  }
  const python = str('python') ?? v.python;
  const command = program ? [python, program, ...args] : [python, '-m', module!, ...args];
  return { name, command, cwd: str('cwd') ?? v.workspaceFolder, env: extra };
}
