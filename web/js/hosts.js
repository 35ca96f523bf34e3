import { clear, h } from './dom.js';
import { api, enc } from './api.js';
import { errorBox, fmtAge } from './format.js';
import { HostSeries, TM_POLL_MS, fmtPercent, gpuUse, memText, sparkCell } from './telemetry.js';
import { serial } from './live.js';
import { scroller } from './jobs.js';

/* -------------------------------------------------------------- hosts */

export function HostsView(root) {
  var self = this;
  this.tbody = h('tbody');
  this.err = h('div');
  this.series = {};   /* host name -> HostSeries */
  this.ticks = 0;
  this.count = h('span', { cls: 'muted', id: 'hosts-count' });
  this.reload = serial(function () { return self.load(); });
  root.appendChild(h('section', { cls: 'card' },
    h('div', { cls: 'toolbar' }, h('h1', { text: 'Hosts' }), this.count),
    this.err,
    scroller(h('table', { id: 'hosts-table', cls: 'grid' },
      h('thead', null, h('tr', null, ['Host', 'State', 'Address', 'CPUs', 'GPUs', 'CPU', 'Memory', 'GPU use',
        'Last heartbeat', 'Current job'].map(function (t) {
        return h('th', { text: t });
      }))),
      this.tbody))));
  this.reload();
}

/* The inventory, then the samples of each host newer than those held. */
HostsView.prototype.load = function () {
  var self = this;
  return api('/v1/hosts').then(function (r) {
    clear(self.err);
    self.hosts = r.hosts;
    self.loadedAt = Date.now();
    return Promise.all(r.hosts.map(function (x) {
      if (!x.telemetry) return null;
      var s = self.series[x.name] = self.series[x.name] || new HostSeries(x.name);
      return s.more(x.telemetry.ts_ms).catch(function () {});
    })).then(function () { self.render(); });
  }, function (e) {
    clear(self.err).appendChild(errorBox(e));
  });
};

HostsView.prototype.render = function () {
  var self = this;
  var hosts = this.hosts || [];
  var by = {};
  hosts.forEach(function (x) { by[x.state] = (by[x.state] || 0) + 1; });
  this.count.textContent = hosts.length + ' hosts' + (hosts.length ? ': ' + Object.keys(by).sort().map(function (k) {
    return by[k] + ' ' + k;
  }).join(', ') : '');
  clear(this.tbody);
  if (!hosts.length) {
    this.tbody.appendChild(h('tr', null, h('td', { colspan: 10, cls: 'muted', text: 'No hosts in the inventory.' })));
    return;
  }
  var drift = Date.now() - (this.loadedAt || Date.now());
  hosts.forEach(function (x) {
    var s = self.series[x.name];
    var xs = s ? s.samples : [];
    var t = xs.length ? xs[xs.length - 1] : x.telemetry;
    var gpu = gpuUse(t);
    self.tbody.appendChild(h('tr', { 'data-host': x.name, 'data-state': x.state, 'data-samples': String(xs.length) },
      h('td', { text: x.name }),
      h('td', null, h('span', { cls: 'badge', 'data-status': x.state, text: x.state }),
        /* Why it is drained: an admin's words, or the quarantine's. */
        x.drain_reason ? h('div', { cls: 'muted drain-reason', title: x.drain_reason, text: x.drain_reason }) : null),
      h('td', { text: x.address || '\u2014' }),
      h('td', { text: x.cpus }),
      h('td', { text: x.gpus }),
      sparkCell('cpu', xs.map(function (v) { return v.cpu_percent; }), 0, 100,
        t ? fmtPercent(t.cpu_percent) : '\u2014', 'CPU use of all cores'),
      sparkCell('mem', xs.map(function (v) { return v.mem_percent; }), 0, 100,
        t ? memText(t) : '\u2014', t ? fmtPercent(t.mem_percent) + ' of ' + (t.mem_limit > 0 ? 'the limit' : 'the total') : null),
      gpu == null ? h('td', { cls: 'tm gpu muted', text: '\u2014' }) :
        sparkCell('gpu', xs.map(gpuUse), 0, 100, fmtPercent(gpu) + ' of ' + t.gpus.length,
          'GPU utilisation, the average over the GPUs'),
      h('td', { cls: 'heartbeat', text: fmtAge(x.last_heartbeat_ms_ago == null ? null : x.last_heartbeat_ms_ago + drift) }),
      h('td', null, x.job ? [h('a', { href: '#/jobs/' + enc(x.job), text: x.job }), ' (' + x.algo + ')'] : '\u2014')));
  });
};

HostsView.prototype.changed = function (c) {
  if (c.hosts || c.jobs || c.periodic) this.reload();
};

/* Samples do not wake the change feed: look for new ones every
 * TM_POLL_MS (one small request, and one per host that has new ones). */
HostsView.prototype.tick = function () {
  this.ticks++;
  if (this.ticks % (TM_POLL_MS / 1000) === 0) this.reload();
  else this.render();
};
