/**
 * The agent's entry (bundled into dist/agent.js, run by Node >= 18 on the GPU host).
 *
 *   node agent.js          coordinator: reads HostCommand lines on stdin, writes AgentEvent
 *                          lines on stdout (and nothing else), logs on stderr. A `run/start`
 *                          measures (on a Slurm login node: through srun, see slurm.ts); a
 *                          `node/join` makes this host a node of another host's run.
 *   node agent.js rank     with COMMCOST_COORDINATOR set: a rank process (started by a node).
 *                          Otherwise: one process of a launcher (srun, mpirun, torchrun; see
 *                          launched.ts): rank 0 coordinates, the others are its nodes.
 *
 * Stdin EOF, SIGTERM, SIGINT or SIGHUP cancel the run: the rank processes are killed, the
 * measured results already sent stay valid, and the process exits. So does a host that goes
 * silent once it sent a `host/keepalive` (hostLiveness.ts: no line for the keepalive's deadline).
 */
import { parseHostCommand, PROTOCOL_VERSION, toLine, type AgentEvent, type JoinCommand } from '../protocol/events';
import { COMMCOST_VERSION } from '../protocol/version';
import { Coordinator, loadLibrary, RunSetupError } from './coordinator';
import { HostWatch } from './hostLiveness';
import { launchedMain } from './launched';
import { onLines } from './lineChannel';
import { NodeHostError, runNodeHost } from './nodeHost';
import { runRank } from './rank';
import { relayThroughSrun, type SlurmRelay } from './slurm';

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function coordinatorMain(): void {
  // stdout carries protocol lines only.
  console.log = console.info = console.warn = (...args: unknown[]) => log(args.map(String).join(' '));
  const emit = (ev: AgentEvent): void => {
    process.stdout.write(toLine(ev));
  };
  emit({ type: 'agent/hello', protocolVersion: PROTOCOL_VERSION, agentVersion: COMMCOST_VERSION, pid: process.pid });

  let coordinator: Coordinator | undefined;
  let relay: SlurmRelay | undefined;
  let running: Promise<void> | undefined;
  // False once the host is known to be gone: nobody reads stdout, so its drain may never come.
  let drain = true;
  const finish = (code: number): void => {
    // Let stdout drain before exiting.
    if (drain) process.stdout.write('', () => process.exit(code));
    else process.exit(code);
  };
  const watch = new HostWatch(emit, (silentMs, deadlineMs) => {
    drain = false;
    log(`commcost agent: the host sent nothing for ${(silentMs / 1000).toFixed(1)} s: cancelling the run and exiting`);
    stop(`no line from the host for ${(silentMs / 1000).toFixed(1)} s (liveness deadline ${(deadlineMs / 1000).toFixed(1)} s): the host stopped or the network to it is cut`);
  });
  const stop = (reason: string): void => {
    watch.dispose();
    if (relay && running) {
      relay.cancel(reason);
      void running.then(() => finish(0));
    } else if (coordinator && running) {
      coordinator.cancel(reason);
      void running.then(() => finish(0));
    } else {
      finish(0);
    }
    // Whatever happens, do not outlive the host by more than a few seconds.
    setTimeout(() => process.exit(1), 8000).unref();
  };

  const overlong = (): void => emit({ type: 'run/error', code: 'BAD_COMMAND', message: 'the host sent a line longer than 8 MiB: it was dropped', where: {}, fatal: false });
  onLines(process.stdin, onCommand, undefined, overlong);
  function onCommand(line: string): void {
    watch.heard();
    let cmd;
    try {
      cmd = parseHostCommand(line);
    } catch (e) {
      emit({ type: 'run/error', code: 'BAD_COMMAND', message: (e as Error).message, where: {}, fatal: false });
      return;
    }
    if (cmd.type === 'host/keepalive') {
      watch.keepalive(cmd);
      return;
    }
    if (cmd.type === 'run/start' || cmd.type === 'node/join') {
      if (running) {
        emit({ type: 'run/error', code: 'BAD_COMMAND', message: 'a run is already in progress', where: {}, fatal: false });
        return;
      }
      if (cmd.type === 'node/join') {
        running = joinAsNode(cmd, emit).then((code) => finish(code));
        return;
      }
      if (cmd.slurm) {
        relay = relayThroughSrun(cmd.options, cmd.slurm, (line) => process.stdout.write(line), log);
        running = relay.done.then(() => finish(0));
        return;
      }
      const cluster = cmd.cluster && cmd.cluster.nodes > 1 ? { kind: 'ssh' as const, nodes: cmd.cluster.nodes, coordinatorAddress: cmd.cluster.coordinatorAddress } : undefined;
      coordinator = new Coordinator(emit, log, cluster);
      running = coordinator.run(cmd.options).then(() => finish(0));
    } else if (cmd.type === 'run/cancel') {
      if (relay) relay.cancel('cancelled by the user');
      else if (coordinator) coordinator.cancel('cancelled by the user');
    }
  }
  process.stdin.on('end', () => stop('stdin closed (host went away)'));
  // EPIPE on stdout: nobody reads the events any more (the host or its connection went away).
  process.stdout.on('error', () => stop('stdout closed (host went away)'));
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => stop(`received ${sig}`));
}

/**
 * This host is node `cmd.index` of a run another host's agent coordinates: find NCCL and the
 * GPUs, reach the coordinator, then start ranks when asked. Ends when the run ends; stdin EOF
 * (the host went away) ends it too, killing its ranks.
 * @returns the exit code: 0 when the run ended normally, 1 when this node could not take part.
 */
async function joinAsNode(cmd: JoinCommand, emit: (ev: AgentEvent) => void): Promise<number> {
  const host = (await import('node:os')).hostname();
  try {
    const { native, info } = loadLibrary(cmd.options);
    const count = native.deviceCount();
    const slots = cmd.options.ranks ?? count;
    if (count === 0 || slots > count) {
      throw new RunSetupError('NO_GPU', count === 0 ? `no GPU visible on ${host}` : `asked for ${slots} ranks per host but ${host} has ${count} GPUs`, 'check CUDA_VISIBLE_DEVICES, or ask for fewer ranks per host');
    }
    const devices = [...Array(slots).keys()];
    const ended = await runNodeHost({
      addresses: cmd.coordinator.addresses,
      port: cmd.coordinator.port,
      token: cmd.coordinator.token,
      connectDeadlineMs: Math.min(60, cmd.options.deadlineSeconds || 60) * 1000,
      log,
      hello: { index: cmd.index, slots, devices, gpus: devices.map((d) => native.deviceInfo(d).name), ncclVersion: info.ncclVersion, simulated: info.simulated },
      onJoined: (coordinator) => emit({ type: 'node/joined', coordinator, hostname: host, slots }),
    });
    return ended === 'lost' ? 1 : 0;
  } catch (e) {
    const code = e instanceof RunSetupError || e instanceof NodeHostError ? (e.code === 'NODE_REFUSED' ? 'NODE_UNREACHABLE' : e.code) : 'INTERNAL';
    const hint =
      e instanceof RunSetupError ? e.hint : e instanceof NodeHostError ? 'set the address this host can reach the first host at (--coordinator-address / commcost.coordinatorAddress), and check firewalls between the hosts' : undefined;
    emit({ type: 'run/error', code, message: (e as Error).message, where: { host }, ...(hint ? { hint } : {}), ...(e instanceof RunSetupError && e.detail ? { detail: e.detail } : {}), fatal: true });
    return 1;
  }
}

if (process.argv[2] === 'rank' && process.env.COMMCOST_COORDINATOR) {
  runRank().catch((e: unknown) => {
    log(`rank failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    process.exit(2);
  });
} else if (process.argv[2] === 'rank') {
  launchedMain(process.argv.slice(3), process.env, log).then(
    (code) => process.exit(code),
    (e: unknown) => {
      log(`commcost: ${e instanceof Error ? e.message : String(e)}`);
      process.exit(2);
    },
  );
} else if (process.argv[2] !== undefined) {
  log(`commcost agent: unknown mode ${JSON.stringify(process.argv[2])}: run \`node agent.js\` (driven by commcost over stdin) or \`node agent.js rank …\` under a launcher`);
  process.exit(2);
} else {
  coordinatorMain();
}
