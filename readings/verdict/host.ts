/**
 * "Here": the host of a run in a few words, from the run's own stamp (GPU model and count, the
 * interconnect between the GPUs the ranks used when the stamp has `nvidia-smi topo -m`, the
 * number of hosts). Never hard-coded: a run without a stamp is described by its rank count.
 */
import { nodeNamesText } from '../../protocol/runNodes';
import { isSimulatedRun, type RunFile } from '../../protocol/runFile';
import { rankWords } from '../../protocol/runNameParts';

/** How two GPUs are linked, from one cell of `nvidia-smi topo -m`. */
function linkOf(cell: string): 'NVLink' | 'PCIe' | undefined {
  if (/^NV\d+$/.test(cell)) return 'NVLink';
  if (/^(PIX|PXB|PHB|NODE|SYS)$/.test(cell)) return 'PCIe';
  return undefined;
}

/**
 * The interconnect between GPUs 0…ranks−1 as `nvidia-smi topo -m` shows it: "NVLink", "PCIe",
 * "NVLink and PCIe", or undefined when the text has no such matrix (a reason it is missing, a
 * simulated run) or there is only one GPU.
 * @param topology the stamp's `topology` text (ANSI escapes allowed).
 */
export function interconnect(topology: string | undefined, ranks: number): string | undefined {
  if (!topology || ranks < 2) return undefined;
  // eslint-disable-next-line no-control-regex
  const lines = topology.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
  const header = lines.find((l) => /^\s*GPU0\b/.test(l) || /^\s+GPU\d/.test(l));
  if (!header) return undefined;
  const columns = header.trim().split(/\s+/);
  const kinds = new Set<string>();
  for (const line of lines) {
    const row = /^GPU(\d+)\s/.exec(line);
    if (!row || Number(row[1]) >= ranks) continue;
    const cells = line.trim().split(/\s+/).slice(1);
    columns.forEach((name, j) => {
      const col = /^GPU(\d+)$/.exec(name);
      if (!col || Number(col[1]) >= ranks || col[1] === row[1]) return;
      const kind = linkOf(cells[j] ?? '');
      if (kind) kinds.add(kind);
    });
  }
  if (kinds.size === 0) return undefined;
  return kinds.size === 1 ? [...kinds][0] : 'NVLink and PCIe';
}

/** The commonest GPU model of the stamp without the vendor's prefix: "NVIDIA H200" → "H200". */
function gpuModel(run: RunFile): string | undefined {
  // Over several nodes the stamp is of one host: each node's GPU models are in the run's nodes.
  const fromNodes = (run.nodes?.length ?? 0) > 1 ? run.nodes!.flatMap((n) => (n.gpus ?? []).filter((g): g is string => typeof g === 'string')) : [];
  if (!run.stamp && fromNodes.length === 0) return undefined;
  const all = fromNodes.length > 0 ? fromNodes : (run.stamp?.gpus ?? []).slice(0, Math.max(1, run.ranks)).map((g) => g.name);
  const names = all.map((g) => g.replace(/^NVIDIA\s+/i, '').trim());
  if (names.length === 0) return undefined;
  const count = new Map<string, number>();
  for (const n of names) count.set(n, (count.get(n) ?? 0) + 1);
  return [...count.entries()].sort((a, b) => b[1] - a[1])[0]![0];
}

/**
 * The hosts of a run over several nodes, named: "gpu0 and gpu1", "n0, n1 and n2", past 8 "n0, …,
 * n7 and 4 more" (protocol/runNodes.ts nodeNamesText, which the comparison's labels use too).
 * Undefined for a run on one host (no `nodes`, or one).
 */
export function nodeNames(run: RunFile): string | undefined {
  return nodeNamesText(run);
}

/**
 * Where the run was measured, for the verdict's first line: its GPUs and count first, the host
 * name after in parentheses, never the host alone: "on 2× H200 NVLink (vm) with NCCL 2.28.9",
 * "on 16× H100 over 2 hosts, gpu0 and gpu1, with NCCL 2.28.9", "on localhost (2 ranks, GPUs not
 * recorded) with NCCL version not recorded" for a run without a stamp; "on vm (simulated, 2 ranks)
 * with NCCL 2.28.9" for a simulated run, whose stamp's device name ("Simulated GPU") is no GPU model.
 * Read from the run's stamp, host and nodes.
 */
export function describeWhere(run: RunFile): string {
  const nccl = run.stamp?.ncclVersion ? `NCCL ${run.stamp.ncclVersion}` : 'NCCL version not recorded';
  const nodes = nodeNames(run);
  if (isSimulatedRun(run)) return `on ${nodes ? `${nodes}, ${run.nodes!.length} nodes` : (run.stamp?.hostname ?? run.host)} (${describeHost(run)}) with ${nccl}`;
  if (!gpuModel(run)) {
    const host = nodes ? `${nodes}, ${run.nodes!.length} nodes` : (run.stamp?.hostname ?? run.host);
    return `on ${host} (${run.ranks} rank${run.ranks === 1 ? '' : 's'}, GPUs not recorded) with ${nccl}`;
  }
  const what = describeHost(run);
  return nodes ? `on ${what}, with ${nccl}` : `on ${what} (${run.stamp?.hostname ?? run.host}) with ${nccl}`;
}

/**
 * The run's host in a few words: "2× H200 NVLink", "1× H200", "16× H100 over 2 hosts, gpu0 and
 * gpu1", "4 ranks on gpu1" (no stamp), "simulated, 2 ranks" (a simulated run: never a GPU model).
 * Read from the run's stamp, ranks and nodes.
 */
export function describeHost(run: RunFile): string {
  const ranks = run.ranks;
  if (isSimulatedRun(run)) return `simulated, ${rankWords(run)}`;
  const nodes = nodeNames(run);
  const model = gpuModel(run);
  if (!model) return `${ranks} rank${ranks === 1 ? '' : 's'} on ${nodes ?? run.host}`;
  if (nodes) return `${ranks}× ${model} over ${run.nodes!.length} hosts, ${nodes}`;
  const link = interconnect(run.stamp?.topology, ranks);
  return `${ranks}× ${model}${link ? ` ${link}` : ''}`;
}
