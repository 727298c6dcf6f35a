/**
 * The results webview entry point (also inlined into the HTML report). Inside VS Code it does the
 * ready handshake and renders every `state/run/update`; standalone it renders the embedded run,
 * or the embedded comparison of several runs (compareView.ts).
 * Snapshots are batched: at most one render per animation frame, always of the latest snapshot.
 */
import type { PlanRequest, RunState } from '../protocol/webviewMessages';
import { h } from './dom';
import { CompareView } from './compareView';
import { connectToHost, keepPanelState, pagePanelState, readEmbeddedComparison, readEmbeddedRun } from './ipc';
import { LatestPerFrame } from './scheduler';
import { STYLES } from './styles';
import { RunView } from './view';

function start(): void {
  const style = document.createElement('style');
  style.textContent = STYLES;
  document.head.appendChild(style);
  const container = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
  // In a VS Code panel: what it shows (run file paths), kept for its restore after a window reload.
  keepPanelState(pagePanelState(document));

  // A comparison report (several runs): rendered once, no host to talk to.
  const comparison = readEmbeddedComparison(document);
  if (comparison) {
    try {
      new CompareView(container).render(comparison);
    } catch (err) {
      console.error('commcost: render failed', err);
    }
    return;
  }

  let view: RunView | undefined;
  // A "show plan" request applies to the state sent before it: after that state's render.
  let plan: PlanRequest | undefined;
  let statePending = false;
  // Assigned once below; the render callback only runs after that (frames are scheduled).
  // eslint-disable-next-line prefer-const
  let actions: ReturnType<typeof connectToHost>;
  const frames = new LatestPerFrame<RunState>((state) => {
    statePending = false;
    view ??= new RunView(container, actions);
    try {
      view.render(state);
      if (plan) view.showPlan(plan);
      plan = undefined;
    } catch (err) {
      console.error('commcost: render failed', err);
    }
  }, (cb) => requestAnimationFrame(cb));

  actions = connectToHost(
    (state) => {
      statePending = true;
      frames.push(state);
    },
    (request) => {
      if (view && !statePending) view.showPlan(request);
      else plan = request;
    },
  );
  if (!actions) {
    const embedded = readEmbeddedRun(document);
    if (embedded) frames.push(embedded);
    else container.appendChild(h('p', {}, 'No run to show.'));
  }
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
