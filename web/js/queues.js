import { clear, h } from './dom.js';
import { api } from './api.js';
import { errorBox } from './format.js';
import { legendValue, plotOpts } from './panels.js';
import { serial } from './live.js';
import { scroller } from './jobs.js';

/* ------------------------------------------------------------- queues */

/*
 * The job queues as the scheduler's last pass saw them (GET /v1/queues,
 * docs/queues.md "Watching the queues"): per queue a table of its shares
 * (guarantee, in use, borrowed, lent, running and waiting jobs), a chart
 * per share of those hosts over time, and the jobs, each waiting one with
 * its place and reason. Another user's job comes without a name.
 */
var QUEUES_POLL_S = 5;
var LINES = [
  { key: 'guarantee', label: 'guarantee', stroke: '#6b7280', dash: [6, 4] },
  { key: 'in_use', label: 'in use', stroke: '#2563eb' },
  { key: 'borrowed', label: 'borrowed', stroke: '#d97706' },
  { key: 'lent', label: 'lent', stroke: '#16a34a' }
];

export function QueuesView(root) {
  var self = this;
  this.box = h('div', { id: 'queues' });
  this.err = h('div');
  this.count = h('span', { cls: 'muted', id: 'queues-count' });
  this.plots = {};   /* "queue/share" -> { u, box } */
  this.ticks = 0;
  this.reload = serial(function () { return self.load(); });
  root.appendChild(h('section', { cls: 'card' },
    h('div', { cls: 'toolbar' }, h('h1', { text: 'Queues' }), this.count),
    this.err, this.box));
  this.reload();
}

QueuesView.prototype.load = function () {
  var self = this;
  return api('/v1/queues').then(function (r) {
    clear(self.err);
    self.data = r;
    self.render();
  }, function (e) {
    clear(self.err).appendChild(errorBox(e));
  });
};

function shareName(s) {
  return s.name == null ? 'another user' : s.name;
}

function fig(v) {
  return v == null ? '\u2014' : String(v);
}

/* The share's samples, and its figures now as the last point. */
function chartData(s, sampledMs) {
  var xs = s.series.slice();
  if (sampledMs && (!xs.length || xs[xs.length - 1].t_ms < sampledMs))
    xs.push({ t_ms: sampledMs, guarantee: s.guarantee, in_use: s.in_use, borrowed: s.borrowed, lent: s.lent });
  return [xs.map(function (p) { return p.t_ms / 1000; })].concat(LINES.map(function (l) {
    return xs.map(function (p) { return p[l.key]; });
  }));
}

QueuesView.prototype.width = function () {
  return Math.max(280, Math.min(560, (this.box.clientWidth || 900) / 2 - 24));
};

/* The chart of one share, made once and given new data after. */
QueuesView.prototype.plot = function (key, title, data) {
  var p = this.plots[key];
  if (p) {
    p.u.setData(data);
  } else {
    var box = h('div', { cls: 'plot queue-plot' });
    var opts = plotOpts(title, 'time', this.width(), LINES.map(function (l) {
      return { label: l.label, stroke: l.stroke, dash: l.dash, width: 2, spanGaps: true,
               points: { show: true, size: 3 }, value: legendValue(String) };
    }));
    opts.height = 160;
    document.body.appendChild(box);
    p = this.plots[key] = { u: new uPlot(opts, data, box), box: box };
    document.body.removeChild(box);
  }
  p.seen = true;
  p.box.setAttribute('data-share', key);
  p.box.setAttribute('data-points', String(data[0].length));
  return p.box;
};

function sharesTable(q) {
  return scroller(h('table', { cls: 'grid compact queue-shares' },
    h('thead', null, h('tr', null, ['Share', 'Kind', 'Guarantee', 'In use', 'Borrowed', 'Lent', 'Running',
      'Waiting', 'Users'].map(function (t) { return h('th', { text: t }); }))),
    h('tbody', null, q.shares.map(function (s) {
      return h('tr', { 'data-share': shareName(s), 'data-in-use': String(s.in_use),
                       'data-borrowed': String(s.borrowed), 'data-lent': String(s.lent) },
        h('td', { text: shareName(s) }),
        h('td', { text: s.kind + (s.strategy ? ' (' + s.strategy + ')' : '') }),
        h('td', { text: fig(s.guarantee) }),
        h('td', { text: s.in_use }),
        h('td', { text: s.borrowed }),
        h('td', { text: s.lent }),
        h('td', { text: s.running }),
        h('td', { text: s.waiting }),
        h('td', { cls: 'muted', text: s.users.map(function (u) {
          return (u.user == null ? 'other users' : u.user || 'no owner') + ': ' + u.running + ' running, ' + u.waiting + ' waiting';
        }).join('; ') }));
    }))));
}

function jobsTable(q) {
  var rows = [];
  q.shares.forEach(function (s) {
    s.jobs.forEach(function (j) {
      rows.push(h('tr', { 'data-job': j.name || '', 'data-state': j.state,
                          'data-position': j.position == null ? '' : String(j.position) },
        h('td', null, j.name ? h('a', { href: '#/jobs/' + encodeURIComponent(j.name), text: j.name }) :
          h('span', { cls: 'muted', text: 'another user\u2019s job' })),
        h('td', { text: shareName(s) }),
        h('td', { text: j.user || '\u2014' }),
        h('td', null, h('span', { cls: 'badge', 'data-status': j.state, text: j.state })),
        h('td', { text: j.position == null ? '\u2014' : j.position }),
        h('td', { text: j.count + ' \u00d7 ' + j.instance_type }),
        h('td', { cls: 'reason', text: j.reason || '' })));
    });
  });
  if (!rows.length) return h('p', { cls: 'muted', text: 'No running or waiting jobs.' });
  return scroller(h('table', { cls: 'grid compact queue-jobs' },
    h('thead', null, h('tr', null, ['Job', 'Share', 'User', 'State', 'Place', 'Hosts', 'Why it waits'].map(
      function (t) { return h('th', { text: t }); }))),
    h('tbody', null, rows)));
}

QueuesView.prototype.render = function () {
  var self = this;
  var r = this.data || { queues: [] };
  var jobs = 0;
  Object.keys(this.plots).forEach(function (k) { self.plots[k].seen = false; });
  clear(this.box);
  r.queues.forEach(function (q) {
    q.shares.forEach(function (s) { jobs += s.running + s.waiting; });
    self.box.appendChild(h('section', { cls: 'queue', 'data-queue': q.name },
      h('div', { cls: 'toolbar' }, h('h2', { text: q.name }),
        h('span', { cls: 'muted', text: 'priority ' + q.priority + ' \u00b7 ' + (q.policy || 'FIFO') })),
      sharesTable(q),
      h('div', { cls: 'plots' }, q.shares.map(function (s) {
        return self.plot(q.name + '/' + shareName(s), shareName(s) + ': hosts', chartData(s, r.sampled_ms));
      })),
      jobsTable(q)));
  });
  Object.keys(this.plots).forEach(function (k) {
    if (self.plots[k].seen) return;
    self.plots[k].u.destroy();
    delete self.plots[k];
  });
  if (!r.queues.length)
    this.box.appendChild(h('p', { cls: 'muted', text: 'No queued or running jobs.' }));
  this.count.textContent = r.queues.length + ' queues, ' + jobs + ' jobs';
};

QueuesView.prototype.changed = function (c) {
  if (c.jobs || c.periodic) this.reload();
};

/* Samples come with the passes, not the change feed: look again every
 * QUEUES_POLL_S. */
QueuesView.prototype.tick = function () {
  this.ticks++;
  if (this.ticks % QUEUES_POLL_S === 0) this.reload();
};

QueuesView.prototype.destroy = function () {
  var self = this;
  Object.keys(this.plots).forEach(function (k) { self.plots[k].u.destroy(); });
  this.plots = {};
};
