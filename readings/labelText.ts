/**
 * The run labels and memory words that both the lens/label text (annotationText.ts) and the
 * hover's Markdown (hoverText.ts) use: a run's label told apart from its peers, its GPUs, memory
 * per GPU and whether it shows a change, one-rank children. Pure; its public names are re-exported
 * by annotationText.ts. Run-file text goes through `plain` here; the hover escapes what it adds.
 */
import type { Annotation, Measured, VariantFigures } from './figures';
import { formatBytes, plain } from './formatText';
import type { Profile } from './profiles';
import { runName } from './runName';
import type { RunFile } from '../protocol/runFile';
import { nodeGpus } from '../protocol/runNodes';

/** A run's GPUs for its size in words: every node's over several hosts (runNodes.ts nodeGpus), else its stamp's. */
export function gpusOf(run: RunFile): readonly { name?: string }[] | undefined {
  return nodeGpus(run)?.map((name) => ({ name })) ?? run.stamp?.gpus;
}

/** The memory per GPU the annotation shows: after the first collective, else after the call. */
export function memoryPerGpu(m: Measured): number | undefined {
  return m.main.memoryAfterFirst ?? m.main.memoryAfterCall;
}

/**
 * Whether a memory figure (bytes per GPU, a free-memory delta) shows a change: it rounds to 1 MiB
 * or more (the verdict's rule, readings/verdict/format.ts isNoMemory).
 */
export function memoryChanged(bytes: number): boolean {
  return Math.round(bytes / 1048576) > 0;
}

/**
 * A memory figure of a lens, label or other-variant line: "484 MiB/GPU", or "no memory change
 * measured" when the delta rounds to 0 MiB or less (a shrink_group that also releases its parent
 * group nets 0: never "0 MiB/GPU", as if the group cost nothing).
 */
export function memoryPart(bytes: number): string {
  return memoryChanged(bytes) ? `${formatBytes(bytes)}/GPU` : 'no memory change measured';
}

/**
 * The short label of a run, said by the status bar and every annotation: the run's name
 * (runName.ts: "1× H200 · NCCL 2.28.9 · 2026-11-29 19:48 UTC", "SIMULATED · 2 ranks · …", "… ·
 * partial" for a run stopped before its end), the time taken from the profile when the file holds
 * none. When another run of `peers` (the store's profiles) would read the same, the label adds
 * what tells them apart, in turn: its experiments ("… · init-abort, split-subset"), the target it
 * was measured on ("… · on gpu-box"), its id. Two different runs never read alike.
 */
export function runLabel(p: Profile, peers: readonly Profile[] = []): string {
  let label = baseLabel(p);
  let twins = peers.filter((q) => q !== p && q.key !== p.key && baseLabel(q) === label);
  const extras: ((q: Profile) => string)[] = [
    (q) => plain(q.run.experiments.map((e) => e.experiment).join(', ') || 'no experiments', 60),
    (q) => `on ${plain(q.run.host, 40)}`,
    (q) => plain(q.run.id, 60),
  ];
  for (const extra of extras) {
    if (twins.length === 0) break;
    const mine = extra(p);
    // Only what differs from a twin is added: a part all of them share tells nothing apart.
    if (twins.every((q) => extra(q) === mine)) continue;
    label = `${label} · ${mine}`;
    twins = twins.filter((q) => extra(q) === mine);
  }
  return label;
}

function baseLabel(p: Profile): string {
  return plain(runName(p.run, { time: p.time }), 120);
}

/** The label of run `p` in `a`'s annotation, told apart from the other runs and from `also` ({@link runLabel}). */
export function sourceLabel(a: Annotation, p: Profile, ...also: Profile[]): string {
  return runLabel(p, [...(a.peers ?? []), ...also]);
}

/**
 * Whether memory per GPU belongs to what `a` headlines: a creation (create), a registration or a
 * suspend/resume — never a teardown, whose variant's memory is that of the communicator it was
 * made with (or, for an abort, of the re-init), nor a query.
 */
export function showsMemory(a: Annotation): boolean {
  return a.entry.role === 'create' || a.entry.role === 'register' || a.entry.role === 'suspend';
}

/**
 * The tag of a one-rank communicator's figures, else undefined: "one-rank communicator: nothing to
 * connect" where the figures are a creation's or a first collective's (`role` create or
 * firstCollective: what connecting would cost is what they lack), "one-rank communicator" for any
 * other call (a teardown, a registration, a suspend: connecting is not what it measures).
 */
export function oneRank(v: VariantFigures, role: string): string | undefined {
  if (v.childRanks !== 1) return undefined;
  return role === 'create' || role === 'firstCollective' ? 'one-rank communicator: nothing to connect' : 'one-rank communicator';
}

/**
 * The size of the group the code makes (CallSite `groupSize`, carried as Measured `groupSize`) set
 * against the figures' (`main.childRanks`), for the lens and the label, where they agree: "one
 * rank: nothing to connect" for a one-rank figure of a one-rank group; undefined otherwise (sizes
 * that differ: {@link noFigureOfCodeSize}).
 */
export function codeSizeWords(m: Measured): string | undefined {
  return m.groupSize === 1 && m.main.childRanks === 1 ? 'one rank: nothing to connect' : undefined;
}

/**
 * Where the code fixes the group's size and the run has no figure of that size (the figures are
 * of a group of other ranks): what the lens, the label and `commcost scan` say instead of the
 * other size's figure, which is never their headline (the hover's table keeps it, said to be of
 * another size): "one rank: nothing to connect · no figure for a one-rank group in this run",
 * "4-rank group: no figure for a 4-rank group in this run (its figures are of a 2-rank one)".
 * Undefined when the code does not fix the size, or the figures are of that size.
 */
export function noFigureOfCodeSize(m: Pick<Measured, 'groupSize'> & { main: Pick<Measured['main'], 'childRanks'> }): string | undefined {
  const g = m.groupSize;
  const n = m.main.childRanks;
  // A size the run does not tell (no childRanks: a run of several ranks) is not a figure of one rank; of more ranks, not known to differ.
  if (g === undefined || n === g || (n === undefined && g !== 1)) return undefined;
  const of = n !== undefined ? ` (its figures are of a ${n}-rank one)` : '';
  return g === 1 ? `one rank: nothing to connect · no figure for a one-rank group in this run${of}` : `${g}-rank group: no figure for a ${g}-rank group in this run${of}`;
}

/** Where the code does not fix the group's size: which size the figures are of (hover), e.g. "Figures of a 2-rank group: the code does not fix this group's size." */
export function figureSizeNote(m: Measured, role: string): string | undefined {
  const n = m.main.childRanks;
  if (m.groupSize !== undefined || n === undefined || (role !== 'create' && role !== 'firstCollective')) return undefined;
  return `Figures of a ${n === 1 ? 'one' : n}-rank group: the code does not fix this group's size.`;
}
