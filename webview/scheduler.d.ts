/**
 * Render batching: many snapshots may arrive between two frames; only the latest is rendered,
 * at most once per animation frame.
 */
/** Schedules one callback per frame. `requestAnimationFrame` in the browser; injectable for tests. */
export type FrameRequester = (cb: () => void) => void;
/**
 * Keeps the latest value pushed and renders it on the next frame. `push` is O(1) and never
 * renders synchronously, so 1,000 snapshots per second cost one render per frame.
 */
export declare class LatestPerFrame<T> {
    private readonly render;
    private readonly requestFrame;
    private pending;
    private scheduled;
    constructor(render: (value: T) => void, requestFrame: FrameRequester);
    /** Replaces the pending value; schedules a frame if none is scheduled. */
    push(value: T): void;
    private flush;
}
