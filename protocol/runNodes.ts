/**
 * The nodes of a run over several hosts, in words, for every header that names where a run was
 * measured (the CLI's, the results page's, the HTML report's): each node with its host, GPUs and
 * ranks, read from the run's `nodes` (the coordinator's placement). Pure; run files are untrusted,
 * so every field is read defensively and the caller escapes the text for its surface.
 */
import type { RunFile } from './runFile';

/** A node's ranks: "rank 3", "ranks 0–7", "ranks 0, 2, 5"; "no rank" for none. */
export function rankSpan(ranks: readonly number[]): string {
  if (ranks.length === 0) return 'no rank';
  if (ranks.length === 1) return `rank ${ranks[0]}`;
  const contiguous = ranks.every((r, i) => i === 0 || r === ranks[i - 1]! + 1);
  return contiguous ? `ranks ${ranks[0]}–${ranks[ranks.length - 1]}` : `ranks ${ranks.join(', ')}`;
}

/** The run's nodes when it spans 2 or more (else undefined), each field made safe to read. */
function severalNodes(run: Pick<RunFile, 'nodes'>): { name: string; gpus: string[]; ranks: number[] }[] | undefined {
  const nodes = Array.isArray(run.nodes) ? run.nodes : [];
  if (nodes.length < 2) return undefined;
  return nodes.map((n, i) => ({
    name: String(n?.hostname || n?.address || `node ${n?.index ?? i}`),
    gpus: Array.isArray(n?.gpus) ? n.gpus.map(String) : [],
    ranks: Array.isArray(n?.ranks) ? n.ranks.filter((r): r is number => typeof r === 'number') : [],
  }));
}

/**
 * Every node of a run over several hosts: "gpu0 (8 GPUs, ranks 0–7), gpu1 (8 GPUs, ranks 8–15)";
 * undefined for a run on one host (no `nodes`, or one).
 */
export function nodesText(run: Pick<RunFile, 'nodes'>): string | undefined {
  const nodes = severalNodes(run);
  if (!nodes) return undefined;
  return nodes.map((n) => `${n.name} (${n.gpus.length} GPU${n.gpus.length === 1 ? '' : 's'}, ${rankSpan(n.ranks)})`).join(', ');
}

/** The GPU models of every node of a run over several hosts, one per rank in node order; undefined for a run on one host. */
export function nodeGpus(run: Pick<RunFile, 'nodes'>): string[] | undefined {
  return severalNodes(run)?.flatMap((n) => n.gpus);
}

/** The most hosts named one by one; past it "gpu0, gpu1, … and 5 more". */
const NAMED_NODES = 8;

/**
 * The hosts of a run over several nodes, by name only: "gpu0 and gpu1", "n0, n1 and n2", past 8
 * "n0, …, n7 and 4 more" (for the verdict's "on …" and the comparison's run labels). Undefined for
 * a run on one host (no `nodes`, or one).
 */
export function nodeNamesText(run: Pick<RunFile, 'nodes'>): string | undefined {
  const nodes = severalNodes(run);
  if (!nodes) return undefined;
  const names = nodes.map((n) => n.name);
  const shown = names.length > NAMED_NODES ? [...names.slice(0, NAMED_NODES), `${names.length - NAMED_NODES} more`] : names;
  return `${shown.slice(0, -1).join(', ')} and ${shown[shown.length - 1]}`;
}
