/**
 * Entry of the trace report bundle (dist/traceReport.js, inlined by client/trace/htmlTrace.ts):
 * reads the trace from `<script type="application/json" id="commcost-trace">`, adds the stylesheet
 * and draws it into `#app` (traceView.ts). A file that is not a trace is said in the page.
 */
import type { TraceFile } from '../protocol/trace';
import { h } from './dom';
import { renderTrace, TRACE_STYLES } from './traceView';

function start(): void {
  const app = document.getElementById('app');
  if (!app) return;
  const style = document.createElement('style');
  style.textContent = TRACE_STYLES;
  document.head.append(style);
  let trace: TraceFile;
  try {
    const parsed = JSON.parse(document.getElementById('commcost-trace')?.textContent ?? 'null') as unknown;
    if (!parsed || typeof parsed !== 'object' || (parsed as { kind?: unknown }).kind !== 'commcost-trace' || !Array.isArray((parsed as { sites?: unknown }).sites)) throw new Error('not a commcost trace');
    trace = parsed as TraceFile;
  } catch (e) {
    app.replaceChildren(h('p', {}, `This report holds no readable trace: ${(e as Error).message}`));
    return;
  }
  renderTrace(app, trace);
}

start();
