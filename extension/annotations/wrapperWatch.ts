/**
 * Feeds the workspace's wrapper index (wrapperIndex.ts) into the annotations: builds it in the
 * background from the workspace folders' Python and C/C++/CUDA files (sourceWalk.ts: the rules
 * of `commcost scan`; the C/C++ grammar loads for the first of those that may hold a site), keeps open documents in it from their editor text (incremental re-parses through the
 * model's edits), re-reads closed files when they change on disk, and tells which open documents'
 * sites through wrappers changed. Everything registered is owned by `scope`.
 */
import { sep } from 'node:path';
import * as vscode from 'vscode';
import type { Disposable } from '../extensionContext';
import type { OutputLog } from '../outputLog';
import type { AnnotationModel, WrapperCallers } from './annotationModel';
import type { CallSiteFinder } from '../../sites/callSites';
import { readSourceFile, SKIPPED_FOLDERS, sourceLanguageOf, walkSources } from '../../client/sourceWalk';
import { WrapperIndex } from '../../sites/wrapperIndex';
import { mayHaveSites } from '../../sites/prefilter';
import type { SourceLanguage } from '../../sites/callSites';

/** Source files indexed at most (a larger workspace keeps the first ones, and says so in the log). */
const MAX_INDEXED_FILES = 20_000;
/** Work between yields to the extension host's event loop while building, ms. */
const SLICE_MS = 20;
const DISK_CHANGE_DELAY_MS = 300;

/** Something that owns disposables (the extension context's scope). */
interface Scope {
  add<T extends Disposable>(d: T): T;
}

const pathOf = (uri: string): string => {
  const u = vscode.Uri.parse(uri);
  return u.scheme === 'file' ? u.fsPath : uri;
};

/**
 * Starts the wrapper index for `model`; `changed` receives the URIs of open documents whose sites
 * through wrappers changed (after the build, a file changed on disk or an edit of another file).
 */
export async function startWrapperIndex(
  scope: Scope,
  finder: CallSiteFinder,
  model: AnnotationModel,
  log: OutputLog,
  changed: (uris: readonly string[]) => void,
): Promise<void> {
  const index = await WrapperIndex.create(finder);
  scope.add({ dispose: () => index.dispose() });
  const open = new Set<string>();
  const report = (what: string, err: unknown): void =>
    log.error(`annotations: wrapper index: ${what}: ${err instanceof Error ? err.message : String(err)}`);
  const callers: WrapperCallers = {
    update: (uri, language, text, scan) => {
      const path = pathOf(uri);
      open.add(path);
      try {
        index.setFile(path, language, text, { scan, keepTree: true });
        return [...index.callerSites(path), ...index.groupFirstSites(path)];
      } catch (err) {
        report(`could not index ${path}`, err);
        return [];
      }
    },
    edit: (uri, changes) => index.editFile(pathOf(uri), changes),
    callers: (uri) => [...index.callerSites(pathOf(uri)), ...index.groupFirstSites(pathOf(uri))],
    closed: (uri) => {
      const path = pathOf(uri);
      open.delete(path);
      index.dropTree(path);
      // The editor's unsaved text goes with the document: back to the file on disk.
      if (path !== uri) void fromDisk(path);
      else index.removeFile(path);
    },
  };
  model.setWrapperCallers(callers);
  // Other open documents may call what an edit changed.
  const afterEdit = (): void => {
    const uris = model.refreshCallers();
    if (uris.length > 0) changed(uris);
  };

  const fromDisk = async (path: string): Promise<void> => {
    const language = sourceLanguageOf(path);
    if (!language || open.has(path)) return;
    // Regular files under the size cap only (a FIFO or a link named *.py is not read).
    const read = await readSourceFile({ readPath: path });
    try {
      if (read.ok) await setFromDisk(path, language, read.text);
      else index.removeFile(path);
    } catch {
      index.removeFile(path);
    }
  };

  /** Indexes a file read from disk; a C/C++ file that may hold a site first loads its grammar (CallSiteFinder `lazyCpp`). */
  const setFromDisk = async (path: string, language: SourceLanguage, text: string): Promise<void> => {
    if (language !== 'python' && mayHaveSites(language, text)) await finder.ready(language);
    index.setFile(path, language, text);
  };

  // Disk changes of files not open here, gathered and applied together.
  const pending = new Map<string, 'set' | 'remove'>();
  let timer: NodeJS.Timeout | undefined;
  scope.add({ dispose: () => clearTimeout(timer) });
  const flush = async (): Promise<void> => {
    const batch = [...pending];
    pending.clear();
    for (const [path, what] of batch) {
      if (what === 'remove') index.removeFile(path);
      else await fromDisk(path);
    }
    afterEdit();
  };
  const onDisk = (uri: vscode.Uri, what: 'set' | 'remove'): void => {
    const path = uri.fsPath;
    if (open.has(path) || path.split(sep).some((part) => SKIPPED_FOLDERS.has(part))) return;
    if (what === 'set' && !index.has(path) && pending.get(path) !== 'set' && index.paths().length >= MAX_INDEXED_FILES) return;
    pending.set(path, what);
    clearTimeout(timer);
    timer = setTimeout(() => void flush(), DISK_CHANGE_DELAY_MS);
  };
  const watcher = scope.add(vscode.workspace.createFileSystemWatcher('**/*.{py,c,h,cc,cpp,cxx,hh,hpp,hxx,cu,cuh}'));
  scope.add(watcher.onDidCreate((u) => onDisk(u, 'set')));
  scope.add(watcher.onDidChange((u) => onDisk(u, 'set')));
  scope.add(watcher.onDidDelete((u) => onDisk(u, 'remove')));

  // The build: in slices, so the extension host stays responsive.
  const started = performance.now();
  const yieldNow = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const roots = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  if (roots.length === 0) return;
  const walked = await walkSources(roots, { maxFiles: MAX_INDEXED_FILES, yieldEvery: yieldNow });
  let slice = performance.now();
  let indexed = 0;
  for (const f of walked.files) {
    if (open.has(f.path)) continue;
    try {
      const read = await readSourceFile(f);
      if (!read.ok) throw new Error(read.reason);
      await setFromDisk(f.path, f.language, read.text);
      indexed++;
    } catch (err) {
      report(`skipped ${f.path}`, err);
    }
    if (performance.now() - slice > SLICE_MS) {
      await yieldNow();
      slice = performance.now();
    }
  }
  const wrappers = index.wrappers().length;
  log.info(
    `annotations: wrapper index of ${indexed} Python and C/C++ files built in ${Math.round(performance.now() - started)} ms (${wrappers} functions reach a lifecycle call)${walked.truncated ? `; stopped at ${MAX_INDEXED_FILES} files` : ''}`,
  );
  afterEdit();
}
