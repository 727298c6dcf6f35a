/**
 * The agent's entry (bundled into dist/agent.js, run by Node >= 18 on the GPU host).
 *
 *   node agent.js          coordinator: reads HostCommand lines on stdin, writes AgentEvent
 *                          lines on stdout (and nothing else), logs on stderr
 *   node agent.js rank     rank process (started by the coordinator)
 *
 * Stdin EOF, SIGTERM, SIGINT or SIGHUP cancel the run: the rank processes are killed, the
 * measured results already sent stay valid, and the process exits.
 */
import { parseHostCommand, PROTOCOL_VERSION, toLine, type AgentEvent } from '../protocol/events';
import { COMMCOST_VERSION } from '../protocol/version';
import { Coordinator } from './coordinator';
import { onLines } from './lineChannel';
import { runRank } from './rank';

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
  let running: Promise<void> | undefined;
  const finish = (code: number): void => {
    // Let stdout drain before exiting.
    process.stdout.write('', () => process.exit(code));
  };
  const stop = (reason: string): void => {
    if (coordinator && running) {
      coordinator.cancel(reason);
      void running.then(() => finish(0));
    } else {
      finish(0);
    }
    // Whatever happens, do not outlive the host by more than a few seconds.
    setTimeout(() => process.exit(1), 8000).unref();
  };

  onLines(process.stdin, (line) => {
    let cmd;
    try {
      cmd = parseHostCommand(line);
    } catch (e) {
      emit({ type: 'run/error', code: 'BAD_COMMAND', message: (e as Error).message, where: {}, fatal: false });
      return;
    }
    if (cmd.type === 'run/start') {
      if (running) {
        emit({ type: 'run/error', code: 'BAD_COMMAND', message: 'a run is already in progress', where: {}, fatal: false });
        return;
      }
      coordinator = new Coordinator(emit, log);
      running = coordinator.run(cmd.options).then(() => finish(0));
    } else if (cmd.type === 'run/cancel') {
      if (coordinator) coordinator.cancel('cancelled by the user');
    }
  });
  process.stdin.on('end', () => stop('stdin closed (host went away)'));
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => stop(`received ${sig}`));
}

if (process.argv[2] === 'rank') {
  runRank().catch((e: unknown) => {
    log(`rank failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    process.exit(2);
  });
} else {
  coordinatorMain();
}
