/**
 * Number and text formatting shared by the webview's header, charts and tables. Pure: no DOM.
 */
import type { ErrorWhere } from '../protocol/events';
/**
 * Formats a duration in milliseconds with 2–3 significant decimals: ≥ 100 ms → 1 decimal
 * ("485.3"), ≥ 1 ms → 2 decimals ("43.12", "3.27"), below 1 ms → 3 significant digits ("0.162",
 * "0.0042"). Non-finite values → "–".
 */
export declare function formatMs(ms: number | undefined | null): string;
/** Bytes → MiB with 1 decimal ("76.0"); non-finite → "–". */
export declare function formatMiB(bytes: number | undefined | null): string;
/** "where" of an error as one line: "host gpu1, rank 2, experiment split, variant halves, step call, iteration 3". */
export declare function formatWhere(where: ErrorWhere | string | undefined): string;
/** GPU list as "2 × NVIDIA H200" or "NVIDIA A40, NVIDIA A100" when models differ; "" when none. */
export declare function formatGpus(gpus: readonly {
    name: string;
}[] | undefined): string;
/** An ISO 8601 date as "2025-01-31 14:02:07" (local time of the viewer); the input on parse failure. */
export declare function formatDate(iso: string | undefined): string;
