/**
 * A tiny element builder. Strings become text nodes (never parsed as HTML), so data from a run
 * file can be inserted anywhere without escaping. There is no innerHTML in the webview.
 */

export type Child = Node | string | number | null | undefined | false;

/**
 * Creates `<tag>` with attributes set through setAttribute (values are data, not markup) and
 * children appended (strings/numbers as text nodes; null/undefined/false skipped).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : value);
  }
  append(el, children);
  return el;
}

/** Appends children as in {@link h}. */
export function append(parent: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces all children of `parent`. */
export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** Sets textContent only when it changed (avoids needless layout). */
export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
