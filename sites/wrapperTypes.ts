/** The shape of a call site made through wrappers, shared by the wrapper index and its facts (no circle between them). */
import type { CallSite } from './callSites';

/** A call site made through wrappers: the finder's fields (api, role, callsInto… of the call inside) at the caller's position. */
export interface WrapperCallSite extends CallSite {
  /**
   * From the callee as defined to the lifecycle call, e.g. ['create_group',
   * 'torch.distributed.new_group']; methods as `Class.method`, constructors as `Class`; the last
   * link is the call inside the innermost wrapper with its module written out through that file's imports.
   */
  chain: string[];
  /** The first wrapper of the chain: where it is defined (line 0-based) and how many lifecycle calls its body makes (loops not counted). */
  wrapper: { file: string; line: number; calls: number };
}
