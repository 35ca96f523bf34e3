import { clear, h } from './dom.js';
import { api, enc, sleep } from './api.js';
import { LOG_LINES_MAX, errorBox, terminal } from './format.js';

/*
 * Logs: a card with a tab per stream (labelled "attempt K · algo-N" by
 * logs/streams) and the lines of the open one, followed with the logs
 * route's long-poll; filters by host and attempt (the tabs and the
 * search) and level (the search); a search over every stream on the
 * server, whose matches open their stream at their line; downloads; and
 * for a failed job a button to the failing rank's first error.
 * update(job) adds the tabs of new streams and opens the first, or
 * follows the open one again.
 */
export function LogsPanel(name) {
  var self = this;
  this.name = name;
  this.status = null;
  this.stream = null;
  this.streams = [];
  this.nstreams = -1;
  this.offset = 0;
  this.follow = true;
  this.target = null;   /* the line to show: { timestamp, message } */
  this.gen = 0;
  this.abort = null;
  this.running = false;   /* or the generation being read */
  this.tabs = h('div', { cls: 'tabs', id: 'log-tabs' });
  this.pre = h('pre', { id: 'log', cls: 'log' });
  var base = '/v1/training-jobs/' + enc(name) + '/logs';
  this.base = base;
  var followBox = this.followBox = h('input', { type: 'checkbox', id: 'log-follow', checked: 'checked',
    onchange: function () { self.follow = followBox.checked; self.target = null; self.open(self.stream, true); } });
  var refilter = function () { self.renderTabs(); };
  this.hostSel = h('select', { id: 'log-host', 'aria-label': 'host', onchange: refilter }, h('option', { value: '', text: 'all hosts' }));
  this.attemptSel = h('select', { id: 'log-attempt', 'aria-label': 'attempt', onchange: refilter }, h('option', { value: '', text: 'all attempts' }));
  this.levelSel = h('select', { id: 'log-level', 'aria-label': 'level' },
    h('option', { value: '', text: 'all lines' }), h('option', { value: 'stderr', text: 'stderr' }),
    h('option', { value: 'error', text: 'errors' }));
  this.query = h('input', { type: 'search', id: 'log-search', placeholder: 'search all streams', 'aria-label': 'search logs',
    onkeydown: function (ev) { if (ev.key === 'Enter') self.search(); } });
  this.regex = h('input', { type: 'checkbox', id: 'log-regex' });
  this.matches = h('div', { id: 'log-matches' });
  this.jump = h('button', { type: 'button', id: 'log-jump-error', text: 'Jump to the error', hidden: 'hidden',
    onclick: function () { self.jumpToError(); } });
  this.dlStream = h('a', { id: 'log-download-stream', cls: 'button', download: '', text: 'Download stream' });
  this.el = h('section', { cls: 'card' },
    h('div', { cls: 'toolbar' }, h('h2', { text: 'Logs' }), this.tabs,
      h('label', { cls: 'follow' }, followBox, ' follow')),
    h('div', { cls: 'log-tools' }, this.hostSel, this.attemptSel, this.levelSel, this.query,
      h('label', { cls: 'muted' }, this.regex, ' regex'),
      h('button', { type: 'button', id: 'log-search-go', text: 'Search', onclick: function () { self.search(); } }),
      this.jump,
      h('a', { id: 'log-download', cls: 'button', href: base + '/download', download: '', text: 'Download all' }),
      this.dlStream),
    this.matches,
    this.pre);
}

LogsPanel.prototype.update = function (job) {
  var self = this;
  var n = (job.rt.streams || []).length;
  this.status = job.desc.TrainingJobStatus;
  this.jump.hidden = this.status !== 'Failed';
  if (n !== this.nstreams) {
    this.nstreams = n;
    api(this.base + '/streams').then(function (r) {
      self.streams = r.streams || [];
      self.renderTabs();
      self.follow_();
    }, function () { self.nstreams = -1; });
    return;
  }
  this.follow_();
};

LogsPanel.prototype.follow_ = function () {
  if (!this.streams.length && !this.stream) {
    this.pre.textContent = terminal(this.status) ? '(no log lines)' : '(no log lines yet)';
    return;
  }
  if (!this.stream && this.streams.length) this.open(this.streams[0].log_stream, true);
  else if (this.stream && !this.running && !terminal(this.status)) this.open(this.stream, false);
};

/* The host and attempt choices, and a tab per stream that passes them. */
LogsPanel.prototype.renderTabs = function () {
  var self = this;
  function options(sel, values, all) {
    var v = sel.value;
    clear(sel).appendChild(h('option', { value: '', text: all }));
    values.forEach(function (x) { sel.appendChild(h('option', { value: x, text: x })); });
    sel.value = values.indexOf(v) >= 0 ? v : '';
  }
  var hosts = {}, attempts = {};
  this.streams.forEach(function (s) { hosts[s.host] = 1; attempts[s.attempt] = 1; });
  options(this.hostSel, Object.keys(hosts).sort(), 'all hosts');
  options(this.attemptSel, Object.keys(attempts).sort(function (a, b) { return a - b; }), 'all attempts');
  clear(this.tabs);
  this.streams.filter(function (s) { return self.passes(s); }).forEach(function (s) {
    self.tabs.appendChild(h('button', { type: 'button', cls: 'tab' + (s.log_stream === self.stream ? ' active' : ''),
      'data-stream': s.log_stream, 'data-host': s.host, 'data-attempt': s.attempt, text: s.label, title: s.log_stream,
      onclick: function () { self.target = null; self.open(s.log_stream, true); } }));
  });
};

LogsPanel.prototype.passes = function (s) {
  return (!this.hostSel.value || s.host === this.hostSel.value) &&
    (!this.attemptSel.value || String(s.attempt) === this.attemptSel.value);
};

LogsPanel.prototype.search = function () {
  var self = this;
  var q = this.query.value;
  var args = ['q=' + enc(q), 'context=2', 'limit=100'];
  if (this.regex.checked) args.push('regex=1');
  if (this.hostSel.value) args.push('host=' + enc(this.hostSel.value));
  if (this.attemptSel.value) args.push('attempt=' + enc(this.attemptSel.value));
  if (this.levelSel.value) args.push('level=' + this.levelSel.value);
  clear(this.matches).appendChild(h('p', { cls: 'muted', text: 'Searching\u2026' }));
  return api(this.base + '/search?' + args.join('&')).then(function (r) {
    self.showMatches(r.matches || [], r.truncated);
  }, function (e) { clear(self.matches).appendChild(errorBox(e)); });
};

LogsPanel.prototype.showMatches = function (matches, truncated) {
  var self = this;
  var box = clear(this.matches);
  box.setAttribute('data-matches', String(matches.length));
  box.appendChild(h('p', { cls: 'muted', text: matches.length + (matches.length === 1 ? ' match' : ' matches') +
    (truncated ? ' (the search stopped early: the log is large)' : '') }));
  matches.forEach(function (m) {
    var ctx = function (l) { return l.message + '\n'; };
    box.appendChild(h('div', { cls: 'match', 'data-stream': m.log_stream, role: 'button', tabindex: '0',
      onclick: function () { self.openAt(m); } },
      h('div', { cls: 'where', text: m.label + ' \u00b7 ' + new Date(m.timestamp).toISOString().slice(11, 23) +
        (m.rank != null ? ' \u00b7 rank ' + m.rank : '') }),
      (m.before || []).map(ctx), h('span', { cls: 'hit', text: m.message }), '\n', (m.after || []).map(ctx)));
  });
};

/* The failing rank's first error, opened in its stream. */
LogsPanel.prototype.jumpToError = function () {
  var self = this;
  return api(this.base + '/search?first_error=1').then(function (r) {
    var m = (r.matches || [])[0];
    self.showMatches(r.matches || [], false);
    if (m) self.openAt(m);
  }, function (e) { clear(self.matches).appendChild(errorBox(e)); });
};

/* Opens the match's stream at its line (after the lines of context the
 * search found before it), however far into the stream it is, and
 * scrolls to it; "from the start" reads the stream from its start. */
LogsPanel.prototype.openAt = function (m) {
  var self = this;
  this.follow = false;
  this.followBox.checked = false;
  this.hostSel.value = '';
  this.attemptSel.value = '';
  this.target = { timestamp: m.timestamp, message: m.message };
  this.startAt = m.offset > 0 ? m.offset : 0;
  this.open(m.log_stream, true);
  this.startAt = 0;
  if (this.offset > 0) {
    this.pre.appendChild(h('button', { type: 'button', cls: 'log-from-start', text: '\u2191 from the start of the stream',
      onclick: function () { self.target = null; self.open(m.log_stream, true); } }));
    this.append((m.before || []).map(function (l) { return Object.assign({ context: true }, l); }));
  }
  this.renderTabs();
};

/* Shows `stream` (from its start when restart) and reads it until its
 * end, or follows it while the job runs and follow is on. */
LogsPanel.prototype.open = function (stream, restart) {
  var self = this;
  if (!stream) return;
  if (restart || stream !== this.stream) {
    this.gen++;
    if (this.abort) this.abort.abort();
    this.stream = stream;
    this.offset = this.startAt || 0;
    this.shownAt = false;   /* the line looked for is in view */
    this.pre.textContent = '';
    this.pre.setAttribute('data-stream', stream);
    this.pre.setAttribute('data-lines', '0');
    this.pre.removeAttribute('data-target');
    this.dlStream.href = this.base + '/download?stream=' + enc(stream);
    Array.prototype.forEach.call(this.tabs.children, function (b) {
      b.classList.toggle('active', b.getAttribute('data-stream') === stream);
    });
  }
  var gen = this.gen;
  if (this.running === gen) return;
  this.running = gen;
  (function next() {
    if (gen !== self.gen) return;
    var follow = self.follow && !terminal(self.status);
    var ctl = window.AbortController ? new AbortController() : null;
    /* Once the line looked for is shown, only what fits beside it. */
    var limit = !follow && self.shownAt ? Math.min(2000, LOG_LINES_MAX - +self.pre.getAttribute('data-lines')) : 2000;
    if (limit <= 0) { self.running = false; return; }
    self.abort = ctl;
    api(self.base + '?stream=' + enc(stream) + '&offset=' + self.offset +
        '&limit=' + limit + (follow ? '&follow=1' : ''), { signal: ctl && ctl.signal }).then(function (r) {
      if (gen !== self.gen) return;
      self.append(r.events || []);
      self.offset = r.next_offset;
      if ((r.events || []).length || follow) next();
      else self.running = false;
    }, function () {
      if (gen !== self.gen) return;
      sleep(2000).then(next);
    });
  })();
};

LogsPanel.prototype.append = function (events) {
  var pre = this.pre;
  var target = this.target, hit = null;
  if (!events.length) return;
  var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  var frag = document.createDocumentFragment();
  events.forEach(function (e) {
    var t = new Date(e.timestamp);
    var line = h('span', { cls: 'line' + (e.stream === 'stderr' ? ' err' : '') + (e.context ? ' context' : '') },
      h('span', { cls: 'ts', text: t.toISOString().slice(11, 23) + ' ' }),
      e.rank ? h('span', { cls: 'rank', text: '[' + e.rank + '] ' }) : null,
      e.message + '\n');
    if (target && !hit && !e.context && e.timestamp === target.timestamp && e.message === target.message) {
      hit = line;
      line.classList.add('target');
    }
    frag.appendChild(line);
  });
  pre.appendChild(frag);
  while (pre.childNodes.length > LOG_LINES_MAX) pre.removeChild(pre.firstChild);
  pre.setAttribute('data-lines', String(+(pre.getAttribute('data-lines') || 0) + events.length));
  if (hit) {
    this.target = null;
    this.shownAt = true;
    pre.setAttribute('data-target', hit.textContent.replace(/\n$/, ''));
    pre.scrollTop = Math.max(0, hit.offsetTop - pre.clientHeight / 3);
  } else if (atBottom && !target) pre.scrollTop = pre.scrollHeight;
};

LogsPanel.prototype.destroy = function () {
  this.gen++;
  if (this.abort) this.abort.abort();
};
