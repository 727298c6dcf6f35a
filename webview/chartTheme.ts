/**
 * The charts' colours, read from the VS Code theme's CSS variables (in the standalone HTML report,
 * from the light or dark defaults of styles.ts). Pure: the CSS variables come in through a reader
 * function, so the palette and the mixing are unit-tested without a DOM.
 */

/** Reads one CSS custom property ("--vscode-foreground"); "" when unset. */
export type CssReader = (variable: string) => string;

/** An sRGB colour with alpha 0–1. */
export interface Rgba {
  r: number;
  g: number;
  b: number;
  a: number;
}

/**
 * Parses "#rgb", "#rgba", "#rrggbb", "#rrggbbaa", "rgb(r, g, b)" and "rgba(r, g, b, a)" (the forms
 * VS Code themes write). @returns undefined for anything else (named colours, color-mix()).
 */
export function parseColor(text: string): Rgba | undefined {
  const t = text.trim().toLowerCase();
  const hex = /^#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/.exec(t)?.[1];
  if (hex) {
    const full = hex.length <= 4 ? [...hex].map((c) => c + c).join('') : hex;
    const n = (i: number): number => parseInt(full.slice(i, i + 2), 16);
    return { r: n(0), g: n(2), b: n(4), a: full.length === 8 ? n(6) / 255 : 1 };
  }
  const fn = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+)(%?))?\s*\)$/.exec(t);
  if (fn) {
    const a = fn[4] === undefined ? 1 : Number(fn[4]) / (fn[5] ? 100 : 1);
    return { r: Number(fn[1]), g: Number(fn[2]), b: Number(fn[3]), a: Math.min(1, Math.max(0, a)) };
  }
  return undefined;
}

/** "rgba(r, g, b, a)" with rounded channels. */
export function formatColor(c: Rgba): string {
  const ch = (x: number): number => Math.round(Math.min(255, Math.max(0, x)));
  return `rgba(${ch(c.r)}, ${ch(c.g)}, ${ch(c.b)}, ${Math.round(Math.min(1, Math.max(0, c.a)) * 1000) / 1000})`;
}

/** `a` mixed with `b`: `t` = 0 gives a, 1 gives b (each channel, alpha included). */
export function mixColor(a: Rgba, b: Rgba, t: number): Rgba {
  const m = (x: number, y: number): number => x + (y - x) * t;
  return { r: m(a.r, b.r), g: m(a.g, b.g), b: m(a.b, b.b), a: m(a.a, b.a) };
}

/** How slot i is filled: its colour, solid in the first round of the palette, then hatched, then dotted. */
export interface SlotStyle {
  color: string;
  /** A paler tint of the colour, the ground of a hatched or dotted fill. */
  tint: string;
  fill: 'solid' | 'hatched' | 'dotted';
}

/** The theme's colours the charts use, as canvas fill/stroke strings. */
export interface ChartColors {
  /** Text: ticks, axis titles, legend, values. */
  text: string;
  /** Grid lines: the text colour, faint. */
  grid: string;
  /** Whiskers. */
  whisker: string;
  /** The colour of slot i ({@link SegmentSeries.color}): the palette's colour i mod 5; a negative slot is the neutral colour (text halfway to the background). */
  slot(i: number): string;
  /** The whole fill of slot i: past the five palette colours the same colours come back hatched, then dotted. */
  slotStyle(i: number): SlotStyle;
}

/**
 * The VS Code chart colours, in slot order, with the light-theme default of each. Yellow is left
 * out: in VS Code's light and dark themes it is too close to orange to tell two touching segments
 * apart.
 */
export const PALETTE: readonly [string, string][] = [
  ['--vscode-charts-blue', '#1a85ff'],
  ['--vscode-charts-orange', '#d18616'],
  ['--vscode-charts-green', '#388a34'],
  ['--vscode-charts-purple', '#652d90'],
  ['--vscode-charts-red', '#e51400'],
];

const color = (read: CssReader, variable: string, fallback: string): Rgba =>
  parseColor(read(variable)) ?? parseColor(fallback)!;

/**
 * The chart colours of the current theme. Slot i is the palette's colour i mod 5 (see
 * {@link PALETTE}); each later round of five is told apart by its fill ({@link SlotStyle}), not by a
 * shade, so neighbouring slots stay apart in light, dark and high-contrast themes.
 */
export function chartColors(read: CssReader): ChartColors {
  const text = color(read, '--vscode-foreground', '#333333');
  const background = color(read, '--vscode-editor-background', '#ffffff');
  const base = (i: number): Rgba => {
    const n = PALETTE.length;
    const [variable, fallback] = PALETTE[((Math.floor(i) % n) + n) % n]!;
    return color(read, variable, fallback);
  };
  const fills: SlotStyle['fill'][] = ['solid', 'hatched', 'dotted'];
  const neutral = mixColor(text, { ...background, a: text.a }, 0.45);
  return {
    text: formatColor(text),
    grid: formatColor({ ...text, a: text.a * 0.18 }),
    whisker: formatColor(text),
    slot: (i) => formatColor(i < 0 ? neutral : base(i)),
    slotStyle(i) {
      if (i < 0) return { color: formatColor(neutral), tint: formatColor(neutral), fill: 'solid' };
      const b = base(i);
      const round = Math.floor(Math.max(0, i) / PALETTE.length);
      return { color: formatColor(b), tint: formatColor(mixColor(b, { ...background, a: b.a }, 0.6)), fill: fills[round % fills.length]! };
    },
  };
}
