/**
 * A native stack frame as the NCCL profiler plugin and the C interposer record it (the `site`
 * member of their records). Its own module so that merge.ts (which reads and symbolises frames)
 * and nativeCalls.ts (whose calls carry one) both import it and never each other both ways;
 * merge.ts re-exports it.
 */

/** A native frame as the plugin records it. */
export interface NativeFrame { obj: string; addr: string; base: string; sym: string; symOff: string }
