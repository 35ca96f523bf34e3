import { h } from './dom.js';
import { api, enc } from './api.js';
import { fmtValue } from './tuning.js';

/* ---------------------------------------------------------- telemetry */

/*
 * Host telemetry (docs/web.md, SAMPLE): each host's samples are fetched
 * a piece at a time from /v1/hosts/NAME/telemetry, only those newer than
 * the last one held (start=), and drawn as small SVG sparklines.
 */
export var TM_POLL_MS = 2000;
export var TM_WINDOW_MS = 10 * 60 * 1000;
export var TM_KEEP = 1500;
export var SVGNS = 'http://www.w3.org/2000/svg';

export function HostSeries(host) {
  this.host = host;
  this.samples = [];
}

HostSeries.prototype.last = function () {
  return this.samples.length ? this.samples[this.samples.length - 1].ts_ms : null;
};

/* Samples from start (epoch ms, the server's clock) up to end, or now. */
HostSeries.prototype.fetch = function (start, end) {
  var self = this;
  var q = 'start=' + Math.floor(start) + (end ? '&end=' + Math.ceil(end) : '');
  return api('/v1/hosts/' + enc(this.host) + '/telemetry?' + q).then(function (r) {
    var last = self.last();
    (r.samples || []).forEach(function (x) {
      if (last == null || x.ts_ms > last) self.samples.push(x);
    });
    if (self.samples.length > TM_KEEP) self.samples.splice(0, self.samples.length - TM_KEEP);
  });
};

/* The samples newer than the last one held; the first time, those of
 * the last TM_WINDOW_MS before `newest` (a sample's time, so that the
 * browser's clock does not matter), or from `from`. */
HostSeries.prototype.more = function (newest, from) {
  var last = this.last();
  if (last != null && newest != null && newest <= last) return Promise.resolve();
  var start = last != null ? last + 1 : from != null ? from : (newest != null ? newest : Date.now()) - TM_WINDOW_MS;
  return this.fetch(start);
};

export function fmtBytes(n) {
  if (n == null || n < 0) return '\u2014';
  var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  var i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(n < 10 ? 1 : 0) : String(n)) + ' ' + units[i];
}

export function fmtPercent(v) {
  return v == null ? '\u2014' : Math.round(v) + '%';
}

/* The memory a sample can use: the smaller of its limit and the total. */
export function memCap(x) {
  return x.mem_limit > 0 && x.mem_limit < x.mem_total ? x.mem_limit : x.mem_total;
}

export function memText(x) {
  return fmtBytes(x.mem_used) + ' / ' + fmtBytes(memCap(x));
}

/* GPU utilisation of a sample, 0..100 averaged over its GPUs, or null. */
export function gpuUse(x) {
  return x && x.gpus && x.gpus.length ? (x.gpu_percent || 0) / x.gpus.length : null;
}

/* A sparkline of values (null: a gap) between lo and hi, as SVG. */
export function sparkline(values, lo, hi, cls) {
  var w = 120, ht = 28;
  var svg = document.createElementNS(SVGNS, 'svg');
  svg.setAttribute('class', 'spark' + (cls ? ' ' + cls : ''));
  svg.setAttribute('viewBox', '0 0 ' + w + ' ' + ht);
  svg.setAttribute('width', String(w));
  svg.setAttribute('height', String(ht));
  svg.setAttribute('role', 'img');
  var n = values.length;
  var span = hi - lo || 1;
  var pts = [], last = null;
  values.forEach(function (v, i) {
    if (v == null || !isFinite(v)) return;
    last = v;
    var x = n > 1 ? 1 + i * (w - 2) / (n - 1) : w / 2;
    var y = ht - 1 - (Math.min(Math.max(v, lo), hi) - lo) / span * (ht - 2);
    pts.push(x.toFixed(1) + ',' + y.toFixed(1));
  });
  var base = document.createElementNS(SVGNS, 'line');
  base.setAttribute('x1', '0'); base.setAttribute('x2', String(w));
  base.setAttribute('y1', String(ht - 0.5)); base.setAttribute('y2', String(ht - 0.5));
  base.setAttribute('class', 'base');
  svg.appendChild(base);
  if (pts.length) {
    var line = document.createElementNS(SVGNS, 'polyline');
    line.setAttribute('points', pts.length === 1 ? pts[0] + ' ' + pts[0] : pts.join(' '));
    svg.appendChild(line);
  }
  svg.setAttribute('data-points', String(pts.length));
  svg.setAttribute('data-last', last == null ? '' : String(last));
  svg.setAttribute('aria-label', pts.length + ' samples, last ' + (last == null ? 'none' : fmtValue(last)));
  return svg;
}

/* A table cell: a sparkline and the current figure as text. */
export function sparkCell(cls, values, lo, hi, text, title) {
  return h('td', { cls: 'tm ' + cls, title: title || null },
    values && values.length ? sparkline(values, lo, hi) : null,
    h('span', { cls: 'figure', text: text }));
}
