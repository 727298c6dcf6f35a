/**
 * JSON lines over a byte stream (a TCP socket or a pipe): typed send, typed receive.
 */
import type { Duplex, Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

/** The longest line a channel accepts (protocol lines are a few kB; a run's plan tens of kB), characters. */
export const MAX_LINE_CHARS = 8 * 1024 * 1024;

/**
 * The longest line a listener accepts before the peer has authenticated (a rank's hello, a
 * node's hello and its proof are a few hundred characters; a node of 256 GPUs under 16 KiB),
 * characters. What an unauthenticated connection can make the agent hold.
 */
export const PRE_AUTH_LINE_CHARS = 16 * 1024;

/**
 * Splits a byte stream into lines: handles partial chunks (a UTF-8 character split across two
 * reads is decoded whole: StringDecoder) and CRLF, drops empty lines. Each chunk is searched
 * once (no re-scan of what is buffered). A line longer than `maxLine` characters (a number, or
 * read anew for each chunk: a limit that changes, e.g. small before a peer's hello) is not
 * buffered or delivered: `onOverflow` is called (default: the stream is destroyed) and the rest
 * of that line is dropped.
 * @returns a function that stops listening.
 */
export function onLines(stream: Readable, cb: (line: string) => void, maxLine: number | (() => number) = MAX_LINE_CHARS, onOverflow?: () => void): () => void {
  let parts: string[] = [];
  let size = 0;
  let overflowed = false;
  const decoder = new StringDecoder('utf8');
  const limit = typeof maxLine === 'function' ? maxLine : () => maxLine;
  const overflow = (): void => {
    overflowed = true;
    parts = [];
    size = 0;
    if (onOverflow) onOverflow();
    else if ('destroy' in stream && typeof stream.destroy === 'function') stream.destroy(new Error(`a line longer than ${limit()} characters`));
  };
  const onData = (chunk: Buffer | string): void => {
    const text = typeof chunk === 'string' ? chunk : decoder.write(chunk);
    const max = limit();
    let start = 0;
    let nl: number;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      if (!overflowed) {
        if (size + (nl - start) > max) overflow();
        else {
          const line = (parts.join('') + text.slice(start, nl)).replace(/\r$/, '');
          if (line.length > 0) cb(line);
        }
      }
      parts = [];
      size = 0;
      overflowed = false;
      start = nl + 1;
    }
    if (start < text.length && !overflowed) {
      parts.push(text.slice(start));
      size += text.length - start;
      if (size > max) overflow();
    }
  };
  stream.on('data', onData);
  return () => stream.off('data', onData);
}

/**
 * A typed JSON-lines channel. Malformed lines, and messages a handler threw on, are reported to
 * `onBadLine`, never thrown.
 * A peer that has gone (closed socket, broken pipe) never crashes the process: writes to an
 * ended or destroyed stream are dropped, and stream errors are reported to `onStreamError`.
 */
export class LineChannel<Out, In> {
  private handlers: ((msg: In) => void)[] = [];

  /** The longest line accepted now, characters (see {@link LineChannel.limitLines}). */
  private maxLine = MAX_LINE_CHARS;

  /**
   * `input` is read for messages, `output` (default: `input`) written to. A line longer than
   * the limit destroys `input` (a peer that sends one is not speaking the protocol).
   */
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
      // A handler that throws on a message it did not expect is that message's fault, not a
      // reason to take the agent down: reported like a bad line.
      for (const h of this.handlers) {
        try {
          h(msg);
        } catch (e) {
          this.onBadLine(line, e);
        }
      }
    }, () => this.maxLine);
  }

  /**
   * Sets the longest line accepted from now on, characters: small before a peer has
   * authenticated (PRE_AUTH_LINE_CHARS), MAX_LINE_CHARS after.
   */
  limitLines(chars: number): void {
    this.maxLine = chars;
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
