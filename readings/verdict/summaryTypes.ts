/**
 * The first page's line types (readings/verdict/summary.ts `firstPageSummary` builds them,
 * summaryC10d.ts the answers from c10d figures, webview/firstPage.ts draws them). Types only.
 */

/** The four answers, and the line that says the run's regime before them. */
export type SummaryKind = 'regime' | 'rebuild' | 'first-collective' | 'teardown' | 'pool';

/** The study's figure beside a line: what it measured, in which setting, from where, and whether it is compared. */
export interface SummaryStudy {
  /** What the study measured, in the field's words ("init to the first 1 MB allreduce"). */
  what: string;
  /** As the study wrote it ("92 ms", "0.16–0.43 s"). */
  written: string;
  /** The setting the study gives it ("4× A40 PCIe, one node, NCCL 2.32.3"). */
  setting: string;
  /** Its measurement and where it is quoted (studyFigures.ts `source`). */
  source: string;
  /** When compared: the comparison and the verdict's judgement, "92 ms vs 174 ms (1.9×): same order as the study (…)". */
  comparison?: string;
  /** When not compared: why ("a communicator of 1 rank has no peer, the study's had 4 ranks"). */
  notCompared?: string;
}

/** One line of the first page. */
export interface SummaryLine {
  kind: SummaryKind;
  /** A few words naming the question ("Rebuild to first collective"). */
  label: string;
  /** The answer in one sentence, from the run's figures. */
  text: string;
  /** The run's headline figure in words ("174 ms", "872 MiB per GPU"), "(simulated)" when so; absent when the run has none. */
  figure?: string;
  /** Where the figure comes from: "init · default · total, median of 10". */
  step?: string;
  /** The study's figures for the same quantity; empty when the study published none. */
  study: SummaryStudy[];
}
