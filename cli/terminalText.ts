/**
 * Text from data made safe for a terminal (no escape sequence from a run file or an agent reaches
 * it). A module of its own so that the CLI's entry (main.ts) reports errors without loading the
 * summary's readings (cli/summary.ts re-exports both).
 */

/**
 * Text made safe for a terminal: every C0 control character (newline and tab included), DEL and
 * every C1 control character is written as a visible escape (`\x1b`, `\n`, `\u009b`), so ESC/CSI/OSC
 * sequences from data are shown, never interpreted. Use on any text that did not come from us.
 */
export function terminalSafe(text: unknown): string {
  // eslint-disable-next-line no-control-regex -- escaping control characters is the point
  return String(text ?? '').replace(/[\x00-\x1f\x7f-\x9f]/g, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\t') return '\\t';
    if (c === '\r') return '\\r';
    const code = c.charCodeAt(0);
    return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/**
 * Our own multi-line text (messages that embed data) made safe for a terminal: like
 * {@link terminalSafe} but newlines are kept.
 */
export function terminalSafeLines(text: unknown): string {
  return String(text ?? '')
    .split('\n')
    .map((l) => terminalSafe(l))
    .join('\n');
}
