/**
 * The agent's access to the native addon (native/, `commcost.node`).
 *
 * Only native/ touches NCCL and CUDA. Every timed figure the agent reports comes from the `ms`
 * of one of these calls: host CLOCK_MONOTONIC taken in native code immediately around the
 * library call (collectives include the stream synchronize). When a barrier generation `gen`
 * is passed, the worker thread first waits for the coordinator's barrier release, then times.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

import type * as Native from '../native/index';
import { loadOrBuildAddon } from './addonBuild';

export type { CommConfig, DeviceInfo, LoadInfo, MemInfo, NativeError, Timed } from '../native/index';
/** The addon's exports (native/index.d.ts). */
export type NativeBinding = typeof Native;
type NativeError = Native.NativeError;

/** True when `e` is an error raised by the addon. */
export function isNativeError(e: unknown): e is NativeError {
  return e instanceof Error && typeof (e as Partial<NativeError>).call === 'string';
}

/** The library error text of a native error, for messages: "ncclCommSplit: unhandled system error (last: ...)" . */
export function describeNativeError(e: unknown): string {
  if (!isNativeError(e)) return e instanceof Error ? e.message : String(e);
  const parts = [e.message];
  if (e.lastError && !e.message.includes(e.lastError)) parts.push(`last error: ${e.lastError}`);
  return parts.join('; ');
}

/** Path of the simulated NCCL (+ CUDA driver) library shipped next to the addon. */
export function simulatedLibraryPath(): string {
  const candidates = [
    ...(process.env.COMMCOST_NATIVE ? [path.join(path.dirname(process.env.COMMCOST_NATIVE), 'libnccl-sim.so')] : []),
    path.join(__dirname, 'native', `${process.platform}-${process.arch}`, 'libnccl-sim.so'),
    path.join(__dirname, 'native', 'libnccl-sim.so'),
    path.join(__dirname, '..', 'dist', 'native', 'libnccl-sim.so'),
  ];
  return candidates.find((c) => fs.existsSync(c)) ?? candidates[0]!;
}

let cached: NativeBinding | undefined;

/**
 * Loads the addon once (native/index.js tries $COMMCOST_NATIVE, then the prebuilt for this
 * platform, then next to the bundle, then dist/native/); when none loads, builds it on this host
 * from the shipped sources (addonBuild.ts).
 * @throws NativeError code LOAD naming every path tried when no addon loads and the build fails.
 */
export function loadBinding(): NativeBinding {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  cached ??= loadOrBuildAddon(() => require('../native/index.js') as NativeBinding);
  return cached;
}
