/**
 * The call-site finder's types (callSites.ts is the facade; pythonSites.ts and cppSites.ts scan).
 * Offsets and columns are UTF-16 code units (what web-tree-sitter reports for a JavaScript
 * string, and what VS Code uses). No `vscode` import.
 */
import type { ApiName, ApiRole, NcclApi } from './apiMap';
import type { FirstCollective } from './groupFlow';

/** VS Code language ids the finder reads; `c` uses the C++ grammar. */
export type SourceLanguage = 'python' | 'cpp' | 'c';

export function isSourceLanguage(id: string): id is SourceLanguage {
  return id === 'python' || id === 'cpp' || id === 'c';
}

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

/** Why a call runs more than once. */
export interface Repetition {
  kind: 'loop' | 'perStep';
  /** e.g. "inside a for loop (line 12)", "in train_step, called in a loop at line 40". */
  detail: string;
}

/** The statement a call sits in, for inserting code after it. */
export interface StatementInfo {
  range: Range;
  /** The statement's leading whitespace (its column's indentation). */
  indent: string;
  /** True when only whitespace precedes the statement on its first line. */
  ownsLine: boolean;
}

/** After a `g = new_group(...)`: does a collective on `g` come before its first other use? */
export interface WarmUpInfo {
  variable: string;
  warm: boolean;
  /**
   * The first collective executed on the group after its creation: warm, the warm-up itself (the
   * next statement, also after a `;` on the same line); not warm, followed across the file's
   * functions through assignments, attributes and returns (groupFlow.ts: in the creating function
   * after the creation, else in a function it calls after it, else in the one other function that
   * has any); absent when it cannot be found or several functions could run first. Never a return
   * or other mention of the group.
   */
  firstCollective?: FirstCollective;
}

export interface CallSite {
  api: ApiName;
  role: ApiRole;
  language: 'python' | 'cpp';
  /** The callee as written: `dist.new_group`, `ng`, `ncclCommSplit`. */
  written: string;
  /** The whole call expression. */
  range: Range;
  /** The callee. */
  nameRange: Range;
  startIndex: number;
  endIndex: number;
  repeated?: Repetition;
  /** Name of the innermost enclosing function, when inside one. */
  enclosingFunction?: string;
  /** Python keyword argument names. */
  keywords: string[];
  /** Where a keyword argument can be added: after the last argument, or after `(`. */
  argumentInsert: Position;
  hasArguments: boolean;
  /** Python: the assignment target, e.g. `g` or `self.tp_group`. */
  assignedTo?: string;
  statement?: StatementInfo;
  /** `init_process_group`: a collective call follows it in the file. */
  collectivesAfter?: boolean;
  /** `new_group` / `split_group` assigned to a variable. */
  warmUp?: WarmUpInfo;
  /** The NCCL call it ends in, e.g. `ncclCommSplit` for `split_group` or nccl4py's `comm.split` (apiMap.ts `callsInto`). */
  callsInto?: NcclApi;
  /**
   * A creation: whether the communicator is made at this line (true), left to the group's first
   * collective (false), or the code does not say (undefined: e.g. a `**kwargs` that may carry
   * `device_id`, a group created where the file's default group is not). From the code only:
   * `device_id=`, `eager_connect_single_device`, a warm-up collective, `split_group`, a direct
   * NCCL init (C/C++, ctypes, nccl4py, PyNcclCommunicator).
   */
  eager?: boolean;
  /**
   * A `first_collective` site: the group it is the first collective of, the line (0-based) of its
   * creation, the API that created it (picks the creation's lazy variant: apiMap.ts `byCreator`), and
   * the collective's own name (`broadcast`, `send`, `all_reduce`…: picks the run's variant first used
   * that way, apiMap.ts `firstUseKindOf`).
   */
  firstCollectiveOf?: { variable: string; line: number; api?: ApiName; collective?: string };
  /**
   * A creation (and its group's first collective): the ranks of the group it makes, where the code
   * fixes it (groupSize.ts: a rank list literal, split_ranks of one length, a split colored by the
   * caller's own rank: 1); picks the figures of a variant of that size (readings/figures.ts).
   */
  groupSize?: number;
  /**
   * A call of a cached getter (wrapperCache.ts: the wrapper creates on its first call and returns
   * the cached group after): this call may create, on the first call only.
   */
  firstCallOnly?: true;
}

/** File-level facts the quick fixes need to write valid code. */
export interface FileFacts {
  /** The name bound to the `torch` module (`torch`, or an alias), when bound. */
  torchName?: string;
  /** How to reach torch.distributed: `dist`, `torch.distributed`, … when bound. */
  distName?: string;
  /** The line after the last top-level import (0 when none). */
  importInsertLine: number;
}

/**
 * A call in the scanned file that makes a lazy NCCL group and returns it through a project's own
 * wrapper (e.g. `self.g = init_custom_process_group(...)`, the wrapper ending in
 * `_new_process_group_helper(...)` without `device_id`), as the wrapper index (wrapperIndex.ts)
 * knows it: the finder follows what it returns to the group's first collective. A call of API
 * `init_process_group` starts the default group lazily through a wrapper returning nothing: the
 * finder walks from it to the default group's first collective (defaultGroup.ts).
 */
export interface GroupMakerCall {
  /** The callee's first character and the end of the argument list (UTF-16 indices, as CallSite startIndex / endIndex). */
  startIndex: number;
  endIndex: number;
  /** The callee as written (`init_custom_process_group`, `utils.make_group`). */
  written: string;
  /** 0-based line of the call. */
  line: number;
  /** The creation API the wrapper ends in (picks the first collective's lazy variant). */
  api: ApiName;
  /** The wrapper returns a tuple and the group is this element (`pg, store = make_group(…)`: 0). */
  element?: number;
}

/** Options of a scan: what the finder cannot know from the file alone. */
export interface ScanOptions {
  /** Calls of wrappers that make a lazy group and return it: their first collectives are sites too. */
  groupMakers?: readonly GroupMakerCall[];
}

export interface ScanResult {
  language: 'python' | 'cpp';
  sites: CallSite[];
  facts: FileFacts;
}
