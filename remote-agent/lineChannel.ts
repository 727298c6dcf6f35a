/**
 * JSON lines over a byte stream (a TCP socket or a pipe): typed send, typed receive.
 */
import type { Duplex, Readable, Writable } from 'node:stream';

/**
 * Splits a byte stream into lines: handles partial chunks and CRLF, drops empty lines.
 * @returns a function that stops listening.
 */
export function onLines(stream: Readable, cb: (line: string) => void): () => void {
  let buffered = '';
  const onData = (chunk: Buffer | string): void => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).replace(/\r$/, '');
      buffered = buffered.slice(nl + 1);
      if (line.length > 0) cb(line);
    }
  };
  stream.on('data', onData);
  return () => stream.off('data', onData);
}

/**
 * A typed JSON-lines channel. Malformed lines are reported to `onBadLine`, never thrown.
 * A peer that has gone (closed socket, broken pipe) never crashes the process: writes to an
 * ended or destroyed stream are dropped, and stream errors are reported to `onStreamError`.
 */
export class LineChannel<Out, In> {
  private handlers: ((msg: In) => void)[] = [];

  /** `input` is read for messages, `output` (default: `input`) written to. */
  constructor(
    input: Readable,
    private readonly output: Writable = input as Duplex,
    private readonly onBadLine: (line: string, error: unknown) => void = () => undefined,
    private readonly onStreamError: (error: Error) => void = () => undefined,
  ) {
    // Without a listener, an EPIPE or write-after-end from a peer that died is an uncaught
    // 'error' event that would take the whole agent down with it.
    const report = (e: Error): void => this.onStreamError(e);
    input.on('error', report);
    if ((output as unknown) !== input) output.on('error', report);
    onLines(input, (line) => {
      let msg: In;
      try {
        msg = JSON.parse(line) as In;
      } catch (e) {
        this.onBadLine(line, e);
        return;
      }
      for (const h of this.handlers) h(msg);
    });
  }

  onMessage(handler: (msg: In) => void): void {
    this.handlers.push(handler);
  }

  /**
   * Writes one message as a line.
   * @returns false when the peer is gone (stream ended or destroyed) and the message was dropped.
   */
  send(msg: Out): boolean {
    if (this.output.destroyed || this.output.writableEnded || !this.output.writable) return false;
    this.output.write(JSON.stringify(msg) + '\n');
    return true;
  }
}
