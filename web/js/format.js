/* Formatting of times, durations, statuses and errors. */
import { h } from './dom.js';

export var STATUSES = ['InProgress', 'Completed', 'Failed', 'Stopping', 'Stopped'];
export var LOG_LINES_MAX = 5000;

/* Epoch milliseconds from the page's ms fields or Describe's seconds. */
export function ms(v) {
  if (v == null || v === 0) return null;
  return typeof v === 'number' && v < 1e11 ? Math.round(v * 1000) : v;
}

export function fmtTime(t) {
  if (!t) return '\u2014';
  var d = new Date(t);
  var pad = function (n) { return (n < 10 ? '0' : '') + n; };
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) +
    ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
}

export function fmtDuration(msec) {
  if (msec == null || msec < 0) return '\u2014';
  var s = Math.round(msec / 1000);
  if (s < 60) return s + 's';
  var m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + (s % 60) + 's';
  var hr = Math.floor(m / 60);
  if (hr < 48) return hr + 'h ' + (m % 60) + 'm';
  return Math.floor(hr / 24) + 'd ' + (hr % 24) + 'h';
}

export function fmtAge(msAgo) {
  if (msAgo == null) return 'never';
  if (msAgo < 1000) return (msAgo / 1000).toFixed(1) + ' s ago';
  return fmtDuration(msAgo) + ' ago';
}

export function badge(status, extra) {
  return h('span', { cls: 'badge', 'data-status': status, text: status + (extra ? ' / ' + extra : '') });
}

export function terminal(status) {
  return status === 'Completed' || status === 'Failed' || status === 'Stopped';
}

export function errorBox(e) {
  return h('div', { cls: 'error', text: (e && e.type ? e.type + ': ' : '') + (e && e.message || e) });
}

/* Where FailureReason names the culprit: "algo-2 (host local-2) RANK 3
 * (local rank 1)", "RANK 1" alone with one rank a host, "rank 1" before;
 * rank is the rank on its host. */
export function culpritFromReason(reason) {
  var m = /(algo-\d+) \(host ([^)]+)\)(?:: | rank (\d+)| RANK \d+(?: \(local rank (\d+)\))?)?/.exec(reason || '');
  if (!m) return null;
  var rank = m[3] != null ? +m[3] : m[4] != null ? +m[4] : / RANK \d+/.test(m[0]) ? 0 : null;
  return { algo: m[1], host: m[2], rank: rank };
}
