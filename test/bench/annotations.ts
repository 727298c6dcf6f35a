/**
 * Annotation benchmark (node --import tsx test/bench/annotations.ts): figures printed as
 * distributions, never asserted. On a generated 5,000-line Python file and a 5,000-line C++
 * file built from the call-site fixtures:
 *
 * 1. parse: full (first and warm) and incremental (one edit: tree.edit + parse against the old tree);
 * 2. annotations ready after a parse: scan (query + analysis) + every site's annotation on the
 *    active profile (cache cleared first) + CodeLens titles, labels and findings. Target < 50 ms;
 * 3. hover from the cache: the site under the cursor + the hover Markdown. Target < 5 ms.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import { codeLensTitle, decorationLabel, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { CallSiteFinder, nodeModulesGrammars, ParsedDocument, type SourceLanguage } from '../../sites/callSites';
import { ProfileStore } from '../../client/profileStore';

const root = process.cwd();
const fixtures = join(root, 'test', 'fixtures', 'callsites');

function dist(values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const q = (p: number): string => (s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN).toFixed(3);
  return `p50 ${q(0.5)}  p90 ${q(0.9)}  p99 ${q(0.99)}  max ${(s[s.length - 1] ?? NaN).toFixed(3)} ms  (n=${s.length})`;
}

function time(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

const PY_FILLER = (i: number): string[] =>
  `
class Block${i}(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        a, _ = self.attn(h, h, h, need_weights=False)
        x = x + torch.dropout(a, 0.1, self.training)
        y = self.mlp(self.norm2(x))
        return x + torch.nn.functional.dropout(y, p=0.1, training=self.training)


def schedule_${i}(step: int, warmup: int = 1000, peak: float = 3e-4) -> float:
    if step < warmup:
        return peak * float(step) / float(max(1, warmup))
    progress = min(1.0, float(step - warmup) / float(max(1, 100000 - warmup)))
    return max(0.0, 0.5 * peak * (1.0 + math.cos(math.pi * progress)))
`.split('\n');

const CPP_FILLER = (i: number): string[] =>
  `
static void pack_${i}(const float* src, float* dst, size_t n, float scale) {
  for (size_t j = 0; j < n; ++j) {
    dst[j] = std::max(0.0f, src[j] * scale);
  }
  if (n > 0) std::printf("packed %zu values, first %f\\n", n, static_cast<double>(dst[0]));
}

static size_t bucket_${i}(size_t bytes) {
  size_t b = 1;
  while (b < bytes) b <<= 1;
  return std::min<size_t>(b, size_t(1) << 30);
}
`.split('\n');

/**
 * `lines` lines: the fixture's imports once, then its body, then `fillerPerCopy` blocks of
 * ordinary model / host code (0 = the bodies back to back: every few lines a call site).
 */
function generate(file: string, lines: number, language: 'python' | 'cpp', fillerPerCopy = 0): string {
  const text = readFileSync(join(fixtures, file), 'utf8');
  const all = text.split('\n');
  const cut = language === 'python' ? all.findIndex((l) => l.startsWith('def ')) : all.findIndex((l) => l.startsWith('namespace'));
  const head = all.slice(0, cut);
  const body = all.slice(cut);
  const out = [...head];
  for (let i = 0; out.length < lines; i++) {
    for (let k = 0; k < fillerPerCopy; k++) out.push(...(language === 'python' ? PY_FILLER(i * 100 + k) : CPP_FILLER(i * 100 + k)));
    for (const l of body)
      out.push(
        language === 'python'
          ? l.replace(/^def (\w+)/, `def $1_${i}`)
          : l.replace(/^namespace elastic/, `namespace elastic${i}`).replace(/^int main\(\)/, `int main${i}()`),
      );
  }
  return out.slice(0, lines).join('\n') + '\n';
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const finder = await CallSiteFinder.load(nodeModulesGrammars(root));
  console.log(`load web-tree-sitter + grammars: ${(performance.now() - t0).toFixed(1)} ms`);
  const store = new ProfileStore((line) => console.error(line));
  await store.reload([{ dir: join(root, 'docs', 'results'), source: 'workspace' }]);
  const rules = () => ({ now: Date.now(), staleAfterDays: 30, expectedNcclVersion: '' });
  const real = store.profiles.find((p) => !p.run.id.includes('reference'));
  if (real) store.setActiveKey(real.key);
  console.log(`profiles: ${store.profiles.length} (active ${store.active?.run.id ?? 'none'})\n`);

  for (const [file, language, filler, what] of [
    ['train_alias.py', 'python', 16, 'realistic: the fixture every ~450 lines among model code'],
    ['comm.cc', 'cpp', 25, 'realistic: the fixture every ~380 lines among host code'],
    ['train_alias.py', 'python', 0, 'worst case: the fixture back to back'],
    ['comm.cc', 'cpp', 0, 'worst case: the fixture back to back'],
  ] as [string, SourceLanguage, number, string][]) {
    const text = generate(file, 5000, language === 'python' ? 'python' : 'cpp', filler);
    const uri = `file:///bench/${file}`;
    console.log(`${file}, ${what}: ${text.split('\n').length - 1} lines (${text.length} chars)`);

    const full: number[] = [];
    for (let i = 0; i < 30; i++) {
      let tree: ReturnType<CallSiteFinder['parse']> | undefined;
      full.push(time(() => (tree = finder.parse(language, text))));
      tree?.delete();
    }
    console.log(`  full parse (first ${full[0]?.toFixed(1)} ms)    ${dist(full.slice(1))}`);

    // Incremental: type one character in the middle, then re-parse against the edited tree.
    const doc = new ParsedDocument(finder, language);
    doc.reparse(text);
    let current = text;
    const inc: number[] = [];
    const lines = text.split('\n');
    for (let i = 0; i < 50; i++) {
      const line = 2500 + i;
      const offset = lines.slice(0, line).reduce((n, l) => n + l.length + 1, 0) + (current.length - text.length);
      const next = current.slice(0, offset) + ' ' + current.slice(offset);
      inc.push(
        time(() => {
          doc.edit([
            { rangeOffset: offset, rangeLength: 0, range: { start: { line, character: 0 }, end: { line, character: 0 } }, text: ' ' },
          ]);
          doc.reparse(next);
        }),
      );
      current = next;
    }
    doc.dispose();
    console.log(`  incremental edit + re-parse + scan   ${dist(inc)}`);

    // Annotations ready after a parse: scan + every annotation (cache cleared) + lens/label texts + findings.
    // The parse inside each `ready` measurement, timed on its own so that what follows it is exact.
    let parseMs = 0;
    const parse = finder.parse.bind(finder);
    finder.parse = (...a: Parameters<CallSiteFinder['parse']>) => {
      const t = performance.now();
      try {
        return parse(...a);
      } finally {
        parseMs += performance.now() - t;
      }
    };
    const model = new AnnotationModel(finder, store, rules);
    model.open(uri, language, text, 1);
    const ready: number[] = [];
    const afterOwnParse: number[] = [];
    const scanOnly: number[] = [];
    let sites = 0;
    for (let i = 0; i < 30; i++) {
      const tree = finder.parse(language, text);
      scanOnly.push(time(() => finder.scan(language, tree, text)));
      tree.delete();
      parseMs = 0;
      ready.push(
        time(() => {
          const state = model.reparse(uri, text, i + 2);
          model.invalidate();
          for (const s of state?.scan.sites ?? []) {
            const a = model.annotate(s.api);
            codeLensTitle(a);
            decorationLabel(a);
          }
          model.findings(uri);
          sites = state?.scan.sites.length ?? 0;
        }) - 0,
      );
      afterOwnParse.push((ready[ready.length - 1] ?? 0) - parseMs);
    }
    delete (finder as Partial<CallSiteFinder>).parse;
    // `ready` above includes the (incremental-free) full parse inside reparse; report both.
    console.log(`  scan only (query + analysis)          ${dist(scanOnly)}`);
    console.log(`  parse + annotations ready (${sites} sites, ${model.findings(uri).length} findings)  ${dist(ready)}`);
    const afterParse = ready.map((r, i) => r - (full[(i % (full.length - 1)) + 1] ?? 0));
    console.log(`  annotations ready after the parse (ready − median-ish parse)  ${dist(afterParse)}`);
    console.log(`  annotations ready after the parse (ready − its own parse, timed)  ${dist(afterOwnParse)}`);

    // Hover from the cache.
    const state = model.state(uri);
    const hover: number[] = [];
    for (let i = 0; i < 2000; i++) {
      const s = state?.scan.sites[(i * 7919) % (state?.scan.sites.length || 1)];
      if (!s) break;
      hover.push(
        time(() => {
          const found = model.at(uri, s.nameRange.start);
          if (found) hoverMarkdown(found.annotation, found.site, hoverLinks(found.annotation));
        }),
      );
    }
    console.log(`  hover from cache                      ${dist(hover)}\n`);
    model.dispose();
  }
  finder.dispose();
}

void main();
