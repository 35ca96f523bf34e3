import { clear, h } from './dom.js';
import { fmtDuration } from './format.js';

/* ------------------------------------------------------------ goodput */

/*
 * Where a job's time went (docs/goodput.md): a bar of Describe's
 * TrainctlGoodput.TimeInSeconds, one segment per category in the order
 * the controller gives, and a legend with each one's time and share.
 * A category the page has no colour for gets the last one, so that the
 * controller can add categories without a page change.
 */

var COLOURS = {
  Queued: 'var(--gray)', Startup: 'var(--blue)', Productive: 'var(--green)',
  Checkpoint: 'var(--purple)', Redone: 'var(--red)', Restart: 'var(--amber)',
  Preempted: '#0891b2', Other: '#a3a3a3'
};

/* Seconds: tenths below a minute, else as the rest of the page. */
function fmtSeconds(s) {
  return s < 60 ? s.toFixed(1) + 's' : fmtDuration(s * 1000);
}

export function GoodputBar() {
  this.el = h('div', { id: 'goodput' });
}

GoodputBar.prototype.update = function (job) {
  var g = job.desc.TrainctlGoodput;
  var bar, legend, t, wall;

  clear(this.el);
  if (!g || !g.TimeInSeconds) return;
  t = g.TimeInSeconds;
  wall = g.WallTimeInSeconds > 0 ? g.WallTimeInSeconds : 0;
  bar = h('div', { cls: 'gp-bar', role: 'img',
                   'aria-label': 'goodput ' + Math.round(100 * (g.Goodput || 0)) + '%' });
  legend = h('ul', { cls: 'gp-legend' });
  Object.keys(t).forEach(function (name) {
    var s = t[name], pct = wall ? 100 * s / wall : 0;
    var colour = COLOURS[name] || COLOURS.Other;
    var label = name + ' ' + fmtSeconds(s) + ' (' + pct.toFixed(1) + '%)';
    if (s > 0) bar.appendChild(h('span', { cls: 'gp-seg', 'data-cat': name, title: label,
                                           style: 'width:' + pct.toFixed(3) + '%;background:' + colour }));
    legend.appendChild(h('li', { 'data-cat': name },
      h('span', { cls: 'gp-key', style: 'background:' + colour }), label));
  });
  this.el.appendChild(h('p', { cls: 'gp-head', text:
    'Goodput ' + (100 * (g.Goodput || 0)).toFixed(1) + '% of ' + fmtSeconds(wall) +
    (g.StepReached >= 0 ? ', step ' + g.StepReached + ', ' + g.StepsRedone + ' steps redone'
                        : ', no step reported') +
    ', ' + g.Attempts + ' attempt' + (g.Attempts === 1 ? '' : 's') }));
  this.el.appendChild(bar);
  this.el.appendChild(legend);
};
