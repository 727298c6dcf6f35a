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

/** A typed JSON-lines channel. Malformed lines are reported to `onBadLine`, never thrown. */
export class LineChannel<Out, In> {
  private handlers: ((msg: In) => void)[] = [];

  /** `input` is read for messages, `output` (default: `input`) written to. */
  constructor(
    input: Readable,
    private readonly output: Writable = input as Duplex,
    private readonly onBadLine: (line: string, error: unknown) => void = () => undefined,
  ) {
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

  send(msg: Out): void {
    this.output.write(JSON.stringify(msg) + '\n');
  }
}
