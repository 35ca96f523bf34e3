/*
 * The trainctl status page: jobs, one job, tuning jobs, hosts. Plain JavaScript with no
 * build step; served by trainctld from memory (scripts/embed.sh). Data
 * comes from the REST face (/v1/training-jobs, /v1/hosts), the page's own
 * endpoints (/v1/ui/...), and the long-poll /v1/changes, which tells the
 * page what to reload (docs/web.md). Text from the server is always set
 * with textContent, never parsed as HTML.
 */
(function () {
  'use strict';

  var STATUSES = ['InProgress', 'Completed', 'Failed', 'Stopping', 'Stopped'];
  var LOG_LINES_MAX = 5000;

  /* ------------------------------------------------------------ helpers */

  function h(tag, attrs) {
    var el = document.createElement(tag);
    var k, i;

    attrs = attrs || {};
    for (k in attrs) {
      if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null)
        continue;
      if (k === 'text') el.textContent = String(attrs[k]);
      else if (k === 'cls') el.className = attrs[k];
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), attrs[k]);
      else el.setAttribute(k, attrs[k]);
    }
    for (i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }

  /* Children: nodes, text, or (nested) arrays of them; null is skipped. */
  function append(el, c) {
    if (c == null || c === false) return;
    if (Array.isArray(c)) c.forEach(function (x) { append(el, x); });
    else el.appendChild(toNode(c));
  }

  function toNode(x) {
    return x instanceof Node ? x : document.createTextNode(String(x));
  }

  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
    return el;
  }

  function enc(s) {
    return encodeURIComponent(s);
  }

  function ApiError(status, type, message) {
    this.status = status;
    this.type = type;
    this.message = message;
  }

  function api(path, opts) {
    opts = opts || {};
    var headers = { 'Accept': 'application/json' };
    if (opts.body != null) headers['Content-Type'] = 'application/json';
    return fetch(path, {
      method: opts.method || 'GET',
      credentials: 'same-origin',
      cache: 'no-store',
      signal: opts.signal,
      headers: headers,
      body: opts.body
    }).then(function (r) {
      return r.text().then(function (t) {
        var js = null;
        try { js = t ? JSON.parse(t) : null; } catch (e) { js = null; }
        if (!r.ok)
          throw new ApiError(r.status, js && js.__type || 'HTTP ' + r.status,
                             js && js.message || t);
        return js;
      });
    });
  }

  function sleep(ms) {
    return new Promise(function (res) { setTimeout(res, ms); });
  }

  /* Epoch milliseconds from the page's ms fields or Describe's seconds. */
  function ms(v) {
    if (v == null || v === 0) return null;
    return typeof v === 'number' && v < 1e11 ? Math.round(v * 1000) : v;
  }

  function fmtTime(t) {
    if (!t) return '\u2014';
    var d = new Date(t);
    var pad = function (n) { return (n < 10 ? '0' : '') + n; };
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) +
      ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function fmtDuration(msec) {
    if (msec == null || msec < 0) return '\u2014';
    var s = Math.round(msec / 1000);
    if (s < 60) return s + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + (s % 60) + 's';
    var hr = Math.floor(m / 60);
    if (hr < 48) return hr + 'h ' + (m % 60) + 'm';
    return Math.floor(hr / 24) + 'd ' + (hr % 24) + 'h';
  }

  function fmtAge(msAgo) {
    if (msAgo == null) return 'never';
    if (msAgo < 1000) return (msAgo / 1000).toFixed(1) + ' s ago';
    return fmtDuration(msAgo) + ' ago';
  }

  function badge(status, extra) {
    return h('span', { cls: 'badge', 'data-status': status, text: status + (extra ? ' / ' + extra : '') });
  }

  function terminal(status) {
    return status === 'Completed' || status === 'Failed' || status === 'Stopped';
  }

  function errorBox(e) {
    return h('div', { cls: 'error', text: (e && e.type ? e.type + ': ' : '') + (e && e.message || e) });
  }

  /* Where FailureReason names the culprit: "algo-2 (host local-2) rank 1". */
  function culpritFromReason(reason) {
    var m = /(algo-\d+) \(host ([^)]+)\)(?:: | rank (\d+))?/.exec(reason || '');
    return m ? { algo: m[1], host: m[2], rank: m[3] != null ? +m[3] : null } : null;
  }

  /* ---------------------------------------------------------- telemetry */

  /*
   * Host telemetry (docs/web.md, SAMPLE): each host's samples are fetched
   * a piece at a time from /v1/hosts/NAME/telemetry, only those newer than
   * the last one held (start=), and drawn as small SVG sparklines.
   */
  var TM_POLL_MS = 2000;
  var TM_WINDOW_MS = 10 * 60 * 1000;
  var TM_KEEP = 1500;
  var SVGNS = 'http://www.w3.org/2000/svg';

  function HostSeries(host) {
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

  function fmtBytes(n) {
    if (n == null || n < 0) return '\u2014';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(n < 10 ? 1 : 0) : String(n)) + ' ' + units[i];
  }

  function fmtPercent(v) {
    return v == null ? '\u2014' : Math.round(v) + '%';
  }

  /* The memory a sample can use: the smaller of its limit and the total. */
  function memCap(x) {
    return x.mem_limit > 0 && x.mem_limit < x.mem_total ? x.mem_limit : x.mem_total;
  }

  function memText(x) {
    return fmtBytes(x.mem_used) + ' / ' + fmtBytes(memCap(x));
  }

  /* GPU utilisation of a sample, 0..100 averaged over its GPUs, or null. */
  function gpuUse(x) {
    return x && x.gpus && x.gpus.length ? (x.gpu_percent || 0) / x.gpus.length : null;
  }

  /* A sparkline of values (null: a gap) between lo and hi, as SVG. */
  function sparkline(values, lo, hi, cls) {
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
  function sparkCell(cls, values, lo, hi, text, title) {
    return h('td', { cls: 'tm ' + cls, title: title || null },
      values && values.length ? sparkline(values, lo, hi) : null,
      h('span', { cls: 'figure', text: text }));
  }

  /* --------------------------------------------------------------- live */

  /*
   * One long-poll at a time on /v1/changes; each answer says what changed
   * and the current view reloads that. A view that is not told anything
   * still refreshes every 15 s, in case an answer was lost.
   */
  var live = {
    cursor: null,
    view: null,
    el: null,
    set: function (state, text) {
      if (!this.el) return;
      this.el.setAttribute('data-state', state);
      this.el.textContent = text;
    },
    start: function () {
      var self = this;
      this.el = document.getElementById('live');
      (function loop() {
        var url = '/v1/changes?timeout=25' + (self.cursor ? '&since=' + enc(self.cursor) : '');
        var t0 = Date.now();
        api(url).then(function (c) {
          var first = self.cursor == null;
          self.cursor = c.cursor;
          self.set('live', 'live');
          if (!first && self.view && self.view.changed) self.view.changed(c);
          /* A chatty job's log batches would wake us many times a second:
           * look at most four times a second. */
          sleep(Math.max(0, 250 - (Date.now() - t0))).then(loop);
        }, function (e) {
          self.set('down', e && e.status === 401 ? 'sign in again' : 'reconnecting');
          sleep(2000).then(loop);
        });
      })();
      setInterval(function () {
        if (self.view && self.view.changed)
          self.view.changed({ jobs: true, hosts: true, logs: true, periodic: true });
      }, 15000);
      setInterval(function () {
        if (self.view && self.view.tick) self.view.tick();
      }, 1000);
    }
  };

  /* One reload at a time; a change while loading loads once more after. */
  function serial(fn) {
    var running = false, again = false;
    return function run() {
      if (running) { again = true; return; }
      running = true;
      Promise.resolve().then(fn).catch(function (e) {
        /* A failed request shows where it was made; a defect must not
         * pass silently. */
        var net = e instanceof TypeError && /fetch|network/i.test(e.message);
        if (e && !(e instanceof ApiError) && !net && e.name !== 'AbortError')
          console.error('reload failed:', e.stack || e);
      }).then(function () {
        running = false;
        if (again) { again = false; run(); }
      });
    };
  }

  /* ----------------------------------------------------------- jobs list */

  /*
   * The jobs list: one page of /v1/ui/jobs at a time (keyset pages: the
   * tokens of the pages before this one are kept to go back), sorted by a
   * column header, filtered; the filters, sort and page size live in the
   * URL hash so a reload keeps them. Rows have Stop (InProgress), Clone,
   * and a checkbox for Compare.
   */
  var JOB_FILTERS = ['status', 'name', 'created_after', 'created_before', 'instance_type', 'tag'];
  var SORTABLE = { Name: 'name', Status: 'status', Created: 'created' };
  var PAGE_SIZES = ['25', '50', '100', '200'];

  /* "2026-12-04" (a date input) to epoch ms at local midnight, and back. */
  function dateToMs(v) {
    var t = v ? new Date(v + 'T00:00:00').getTime() : NaN;
    return isNaN(t) ? '' : String(t);
  }

  function msToDate(v) {
    if (!v) return '';
    var d = new Date(+v);
    var pad = function (n) { return (n < 10 ? '0' : '') + n; };
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
  }

  function JobsView(root, params) {
    var self = this;
    this.root = root;
    this.filter = {};
    JOB_FILTERS.forEach(function (k) { self.filter[k] = params[k] || ''; });
    this.sort = SORTABLE[params.sort] || params.sort || 'created';
    this.order = params.order === 'asc' || params.order === 'desc' ? params.order : '';
    this.limit = PAGE_SIZES.indexOf(params.limit) >= 0 ? params.limit : '50';
    this.tokens = [];   /* the tokens of the pages before this one */
    this.token = '';
    this.next = null;
    this.rows = [];
    this.selected = {};
    this.reload = serial(function () { return self.load(); });

    function refilter() { self.tokens = []; self.token = ''; self.syncHash(); self.reload(); }
    /* A text or date filter; typing settles for 250 ms before it loads. */
    function input(key, attrs, toValue) {
      var el = h('input', Object.assign({ id: 'filter-' + key.replace('_', '-'), 'aria-label': attrs.placeholder }, attrs));
      var timer = null;
      el.value = attrs.type === 'date' ? msToDate(self.filter[key]) : self.filter[key];
      el.addEventListener(attrs.type === 'date' ? 'change' : 'input', function () {
        clearTimeout(timer);
        timer = setTimeout(function () { self.filter[key] = toValue ? toValue(el.value) : el.value.trim(); refilter(); }, 250);
      });
      return el;
    }
    var statusSel = h('select', { id: 'filter-status', 'aria-label': 'status',
      onchange: function () { self.filter.status = statusSel.value; refilter(); } },
      h('option', { value: '', text: 'any status' }),
      STATUSES.map(function (s) { return h('option', { value: s, text: s }); }));
    statusSel.value = this.filter.status;
    var sizeSel = h('select', { id: 'page-size', 'aria-label': 'page size',
      onchange: function () { self.limit = sizeSel.value; refilter(); } },
      PAGE_SIZES.map(function (n) { return h('option', { value: n, text: n + ' a page' }); }));
    sizeSel.value = this.limit;
    this.count = h('span', { cls: 'muted', id: 'jobs-count' });
    this.prevBtn = h('button', { type: 'button', id: 'page-prev', text: '\u2190 Previous', onclick: function () {
      self.token = self.tokens.pop() || ''; self.reload(); } });
    this.nextBtn = h('button', { type: 'button', id: 'page-next', text: 'Next \u2192', onclick: function () {
      if (!self.next) return;
      self.tokens.push(self.token); self.token = self.next; self.reload(); } });
    this.compareBtn = h('button', { type: 'button', id: 'compare', text: 'Compare', disabled: 'disabled',
      onclick: function () { location.hash = '#/compare?jobs=' + Object.keys(self.selected).map(enc).join(','); } });
    this.tbody = h('tbody');
    this.err = h('div');
    this.head = h('tr');
    this.loadMs = h('span', { cls: 'muted', id: 'jobs-load-ms' });
    this.el = h('section', { cls: 'card', id: 'jobs-view' },
      h('div', { cls: 'toolbar' }, h('h1', { text: 'Training jobs' }), statusSel,
        input('name', { type: 'search', placeholder: 'name contains' }),
        input('instance_type', { type: 'search', placeholder: 'instance type', size: 12 }),
        input('tag', { type: 'search', placeholder: 'tag key[=value]', size: 14 }),
        h('label', { cls: 'muted' }, 'created after ', input('created_after', { type: 'date', placeholder: 'created after' }, dateToMs)),
        h('label', { cls: 'muted' }, 'before ', input('created_before', { type: 'date', placeholder: 'created before' }, dateToMs)),
        this.count),
      this.err,
      scroller(h('table', { id: 'jobs-table', cls: 'grid' }, h('thead', null, this.head), this.tbody)),
      h('div', { cls: 'toolbar pager' }, this.prevBtn, this.nextBtn, sizeSel, this.compareBtn, this.loadMs));
    root.appendChild(this.el);
    this.renderHead();
    this.reload();
  }

  /* A box that scrolls its (wide) table sideways on a narrow screen. */
  function scroller(table) {
    return h('div', { cls: 'scroll' }, table);
  }

  /* The sort's default order: newest first by creation, else A to Z. */
  JobsView.prototype.orderOf = function () {
    return this.order || (this.sort === 'created' ? 'desc' : 'asc');
  };

  JobsView.prototype.renderHead = function () {
    var self = this;
    clear(this.head);
    ['Name', 'Status', 'Secondary status', 'Instances', 'Created', 'Duration', 'Attempt', 'Actions', 'Compare'].forEach(function (t) {
      var key = SORTABLE[t];
      if (!key) { self.head.appendChild(h('th', { text: t })); return; }
      var on = self.sort === key;
      self.head.appendChild(h('th', { cls: 'sortable' + (on ? ' sorted' : ''), 'data-sort': key,
        'aria-sort': on ? (self.orderOf() === 'asc' ? 'ascending' : 'descending') : null,
        onclick: function () {
          if (self.sort === key) self.order = self.orderOf() === 'asc' ? 'desc' : 'asc';
          else { self.sort = key; self.order = ''; }
          self.tokens = []; self.token = '';
          self.renderHead(); self.syncHash(); self.reload();
        } }, t + (on ? (self.orderOf() === 'asc' ? ' \u25b2' : ' \u25bc') : '')));
    });
  };

  JobsView.prototype.query = function () {
    var self = this;
    var q = [];
    JOB_FILTERS.forEach(function (k) { if (self.filter[k]) q.push(k + '=' + enc(self.filter[k])); });
    if (this.sort !== 'created') q.push('sort=' + this.sort);
    if (this.order) q.push('order=' + this.order);
    return q;
  };

  JobsView.prototype.syncHash = function () {
    var q = this.query();
    if (this.limit !== '50') q.push('limit=' + this.limit);
    history.replaceState(null, '', '#/jobs' + (q.length ? '?' + q.join('&') : ''));
  };

  JobsView.prototype.load = function () {
    var self = this;
    var q = this.query().concat(['limit=' + this.limit]);
    if (this.sort === 'created' && !this.order) q.push('order=desc');
    if (this.token) q.push('next_token=' + enc(this.token));
    var t0 = Date.now();
    return api('/v1/ui/jobs?' + q.join('&')).then(function (r) {
      clear(self.err);
      self.rows = r.jobs;
      self.next = r.next_token || null;
      self.render();
      self.loadMs.textContent = 'loaded in ' + (Date.now() - t0) + ' ms';
      self.el.setAttribute('data-load-ms', String(Date.now() - t0));
    }, function (e) {
      clear(self.err).appendChild(errorBox(e));
    });
  };

  JobsView.prototype.duration = function (j) {
    var start = j.creation_ms;
    var end = j.end_ms || (terminal(j.status) ? j.last_modified_ms : Date.now());
    return end - start;
  };

  JobsView.prototype.render = function () {
    var self = this;
    clear(this.tbody);
    var first = this.tokens.length * +this.limit;
    this.count.textContent = this.rows.length ? 'jobs ' + (first + 1) + '\u2013' + (first + this.rows.length) +
      (this.next ? '' : ' of ' + (first + this.rows.length)) : '0 jobs';
    this.prevBtn.disabled = !this.tokens.length;
    this.nextBtn.disabled = !this.next;
    this.el.setAttribute('data-page', String(this.tokens.length + 1));
    if (!this.rows.length) {
      this.tbody.appendChild(h('tr', null, h('td', { colspan: 9, cls: 'muted', text: 'No training jobs match.' })));
      return;
    }
    this.rows.forEach(function (j) {
      var inst = j.instance_count + ' \u00d7 ' + (j.instance_type || 'instance groups');
      var box = h('input', { type: 'checkbox', cls: 'pick', 'aria-label': 'compare ' + j.name, onchange: function () {
        if (box.checked) self.selected[j.name] = 1; else delete self.selected[j.name];
        self.compareBtn.disabled = Object.keys(self.selected).length < 2;
      } });
      box.checked = !!self.selected[j.name];
      self.tbody.appendChild(h('tr', { 'data-job': j.name, 'data-status': j.status },
        h('td', null, h('a', { href: '#/jobs/' + enc(j.name), text: j.name })),
        h('td', { cls: 'status' }, badge(j.status)),
        h('td', { cls: 'secondary', text: j.secondary_status }),
        h('td', { text: inst }),
        h('td', { cls: 'created', text: fmtTime(j.creation_ms) }),
        h('td', { cls: 'duration', text: fmtDuration(self.duration(j)) }),
        h('td', { cls: 'attempt', text: j.attempt || '\u2014' }),
        h('td', { cls: 'actions' },
          j.status === 'InProgress' ? h('button', { type: 'button', cls: 'stop', text: 'Stop', onclick: function (ev) {
            stopJob(j.name, ev.target).then(function () { self.reload(); });
          } }) : null,
          h('a', { cls: 'clone', href: '#/clone/' + enc(j.name), text: 'Clone' })),
        h('td', null, box)));
    });
    this.compareBtn.disabled = Object.keys(this.selected).length < 2;
  };

  /* StopTrainingJob, once the user confirms; the button shows the outcome. */
  function stopJob(name, btn) {
    if (!window.confirm('Stop training job ' + name + '?')) return Promise.resolve();
    btn.disabled = true;
    return api('/v1/training-jobs/' + enc(name) + '/stop', { method: 'POST', body: '{}' }).then(function () {
      btn.textContent = 'Stopping';
    }, function (e) {
      btn.disabled = false;
      btn.title = e.message;
      btn.textContent = 'Stop failed';
    });
  }

  JobsView.prototype.changed = function (c) {
    if (c.jobs) this.reload();
  };

  JobsView.prototype.tick = function () {
    var self = this;
    Array.prototype.forEach.call(this.tbody.querySelectorAll('tr[data-job]'), function (tr) {
      var j = self.rows.filter(function (r) { return r.name === tr.getAttribute('data-job'); })[0];
      if (j && !terminal(j.status)) tr.querySelector('.duration').textContent = fmtDuration(self.duration(j));
    });
  };

  /*
   * Clone: the job's CreateTrainingJob body as JSON in a textarea, named
   * NAME-clone-N (the first N not taken), sent to POST /v1/training-jobs;
   * the server's validation message shows when it refuses.
   */
  function CloneView(root, name) {
    var self = this;
    this.err = h('div', { id: 'clone-error' });
    this.text = h('textarea', { id: 'clone-body', rows: 24, spellcheck: 'false', 'aria-label': 'CreateTrainingJob request' });
    this.btn = h('button', { type: 'button', id: 'clone-create', text: 'Create training job', onclick: function () { self.create(); } });
    root.appendChild(h('div', null,
      h('p', { cls: 'crumbs' }, h('a', { href: '#/jobs', text: 'Training jobs' }), ' / ',
        h('a', { href: '#/jobs/' + enc(name), text: name }), ' / clone'),
      card('New training job from ' + name, [
        h('p', { cls: 'muted', text: 'The CreateTrainingJob request of ' + name + '; edit it and create.' }),
        this.text, this.err, h('div', { cls: 'toolbar' }, this.btn)])));
    Promise.all([api('/v1/ui/jobs/' + enc(name) + '/request'),
                 api('/v1/ui/jobs?limit=1000&sort=name&name=' + enc(name + '-clone-'))]).then(function (r) {
      var taken = {};
      r[1].jobs.forEach(function (j) { taken[j.name] = 1; });
      var n = 1;
      while (taken[name + '-clone-' + n]) n++;
      r[0].TrainingJobName = name + '-clone-' + n;
      self.text.value = JSON.stringify(r[0], null, 2);
    }, function (e) { self.err.appendChild(errorBox(e)); });
  }

  CloneView.prototype.create = function () {
    var self = this;
    var body;
    clear(this.err);
    try { body = JSON.parse(this.text.value); } catch (e) {
      this.err.appendChild(errorBox({ type: 'Invalid JSON', message: e.message }));
      return;
    }
    this.btn.disabled = true;
    api('/v1/training-jobs', { method: 'POST', body: JSON.stringify(body) }).then(function () {
      location.hash = '#/jobs/' + enc(body.TrainingJobName);
    }, function (e) {
      self.btn.disabled = false;
      self.err.appendChild(errorBox(e));
    });
  };

  /* ------------------------------------------------------------ one job */

  /*
   * The job page: JobView loads the job (DescribeTrainingJob and the page's
   * /v1/ui/jobs/NAME) and hands it to one component per part of the page.
   * Each component owns its DOM subtree (`el`) and redraws it in
   * update(job), where job is { desc: Describe's answer, rt: the page's };
   * the metrics and logs panels also load their own data.
   */

  function JobView(root, name) {
    var self = this;
    this.name = name;
    this.job = null;
    this.lastStatus = null;
    this.reload = serial(function () { return self.load(); });

    this.err = h('div');
    this.head = new JobHeader();
    this.failure = new FailureBox();
    this.summary = new JobSummary();
    this.timeline = new StatusTimeline();
    this.restarts = new RestartList();
    this.hosts = new JobHosts();
    this.telemetry = new JobTelemetry(name);
    this.metrics = new MetricsPanel(name);
    this.logs = new LogsPanel(name);
    this.request = new RequestPanel();
    root.appendChild(h('div', null,
      h('p', { cls: 'crumbs' }, h('a', { href: '#/jobs', text: 'Training jobs' }), ' / ', name),
      this.err,
      card(null, [this.head.el, this.failure.el, this.summary.el]),
      card('Status transitions', [this.timeline.el, this.restarts.el]),
      card('Hosts', [this.hosts.el, this.telemetry.el]),
      card('Metrics', this.metrics.el),
      this.logs.el,
      card('Request', this.request.el)));
    this.reload();
    this.metrics.reload();
  }

  /* A card of the page: a section, with a heading when there is a title. */
  function card(title, body) {
    return h('section', { cls: 'card' }, title ? h('h2', { text: title }) : null, body);
  }

  JobView.prototype.destroy = function () {
    this.logs.destroy();
    this.metrics.destroy();
  };

  JobView.prototype.load = function () {
    var self = this;
    var path = enc(this.name);
    return Promise.all([api('/v1/training-jobs/' + path), api('/v1/ui/jobs/' + path)]).then(function (r) {
      clear(self.err);
      self.job = { desc: r[0], rt: r[1] };
      self.render();
    }, function (e) {
      clear(self.err).appendChild(errorBox(e));
    });
  };

  JobView.prototype.render = function () {
    var job = this.job;
    var status = job.desc.TrainingJobStatus;

    [this.head, this.failure, this.summary, this.timeline, this.restarts, this.hosts,
     this.request, this.logs].forEach(function (part) { part.update(job); });
    this.telemetry.update(job, this.hosts.shown);
    if (this.lastStatus && this.lastStatus !== status) this.metrics.reload();
    this.lastStatus = status;
  };

  JobView.prototype.changed = function (c) {
    if (c.jobs || c.hosts) this.reload();
    if (c.logs || c.jobs) this.metrics.reload();
  };

  JobView.prototype.tick = function () {
    if (this.job && !terminal(this.job.desc.TrainingJobStatus)) this.summary.update(this.job);
    this.telemetry.tick();
  };

  /* The job's name and its status badge. */
  function JobHeader() {
    this.el = h('div', { id: 'job-head' });
  }

  JobHeader.prototype.update = function (job) {
    var d = job.desc;
    clear(this.el).appendChild(h('div', { cls: 'toolbar' },
      h('h1', { id: 'job-name', text: d.TrainingJobName }),
      h('span', { id: 'job-status', 'data-status': d.TrainingJobStatus },
        badge(d.TrainingJobStatus, d.SecondaryStatus))));
  };

  /* Which rank or host failed first, and FailureReason; empty otherwise. */
  function FailureBox() {
    this.el = h('div', { id: 'failure-box' });
  }

  FailureBox.prototype.update = function (job) {
    var d = job.desc;
    var box = clear(this.el);
    var f = job.rt.first_failure;
    var c = culpritFromReason(d.FailureReason);

    if (!d.FailureReason && !f) return;
    var lines = [];
    if (f)
      lines.push(h('div', { id: 'failing-host' }, 'First failing rank: ',
        h('b', { text: f.algo + ' on host ' + f.host + ', rank ' + f.rank }),
        f.signal ? ' (killed by signal ' + f.signal + ')' : ' (exit code ' + f.exit_code + ')'));
    else if (c)
      lines.push(h('div', { id: 'failing-host' }, 'Failing host: ',
        h('b', { text: c.algo + ' on host ' + c.host + (c.rank != null ? ', rank ' + c.rank : '') })));
    if (d.FailureReason)
      lines.push(h('div', null, 'Reason: ', h('span', { id: 'failure-reason', text: d.FailureReason })));
    box.appendChild(h('div', { id: 'failure', cls: 'failure' }, lines));
  };

  /* Times, attempt, image and where the output goes; the view redraws it
   * every second while the job runs, for its duration. */
  function JobSummary() {
    this.el = h('dl', { id: 'summary', cls: 'kv' });
  }

  JobSummary.prototype.update = function (job) {
    var d = job.desc, rt = job.rt;
    var rc = d.ResourceConfig || {};
    var start = ms(d.TrainingStartTime), end = ms(d.TrainingEndTime), created = ms(d.CreationTime);
    var took = (end || (terminal(d.TrainingJobStatus) ? ms(d.LastModifiedTime) : Date.now())) - created;
    /* TrainingTimeInSeconds comes rounded from the server's clock: the
     * job as a whole cannot have taken less, so the two always agree. */
    var trained = d.TrainingTimeInSeconds != null ? d.TrainingTimeInSeconds * 1000 : null;
    if (trained != null && took < trained) took = trained;
    var rows = [
      ['Status message', (d.SecondaryStatusTransitions || []).slice(-1).map(function (t) { return t.StatusMessage; })[0]],
      ['Created', fmtTime(created)],
      ['Training started', fmtTime(start)],
      ['Training ended', fmtTime(end)],
      ['Duration', fmtDuration(took)],
      ['Training time', trained != null ? fmtDuration(trained) : null],
      ['Attempt', rt.attempt || '\u2014'],
      ['Instances', rc.InstanceCount != null ? rc.InstanceCount + ' \u00d7 ' + rc.InstanceType : null],
      ['Image', d.AlgorithmSpecification && (d.AlgorithmSpecification.TrainingImage || d.AlgorithmSpecification.AlgorithmName)],
      ['Output', d.OutputDataConfig && d.OutputDataConfig.S3OutputPath],
      ['Model', d.ModelArtifacts && d.ModelArtifacts.S3ModelArtifacts],
      ['Stop reason', rt.stop_reason],
      ['ARN', d.TrainingJobArn]
    ];
    var dl = clear(this.el);
    rows.forEach(function (r) {
      if (r[1] == null || r[1] === '') return;
      dl.appendChild(h('dt', { text: r[0] }));
      dl.appendChild(h('dd', { text: r[1] }));
    });
  };

  /* SecondaryStatusTransitions: a bar of their durations over a table. */
  function StatusTimeline() {
    this.el = h('div', { id: 'timeline' });
  }

  StatusTimeline.prototype.update = function (job) {
    var d = job.desc;
    var tr = d.SecondaryStatusTransitions || [];
    var done = terminal(d.TrainingJobStatus);
    var now = Date.now();
    var el = clear(this.el);
    if (!tr.length) { el.appendChild(h('p', { cls: 'muted', text: 'No transitions yet.' })); return; }
    var t1 = ms(tr[tr.length - 1].EndTime) || (done ? ms(tr[tr.length - 1].StartTime) : now);
    el.appendChild(timelineBar(tr, t1));
    el.appendChild(transitionsTable(tr, done, now));
  };

  /* One segment per transition, as wide as its share of the time up to t1. */
  function timelineBar(tr, t1) {
    var t0 = ms(tr[0].StartTime);
    var total = Math.max(t1 - t0, 1);
    var bar = h('div', { cls: 'bar', role: 'img', 'aria-label': 'status timeline' });
    tr.forEach(function (t) {
      var s = ms(t.StartTime), e = ms(t.EndTime) || t1;
      var w = Math.max(100 * (e - s) / total, 0.8);
      bar.appendChild(h('span', { cls: 'seg', 'data-status': t.Status, style: 'width:' + w.toFixed(2) + '%',
        title: t.Status + ' ' + fmtDuration(e - s) }));
    });
    return bar;
  }

  function transitionsTable(tr, done, now) {
    return h('table', { cls: 'grid compact', id: 'transitions' },
      h('thead', null, h('tr', null, ['Status', 'Started', 'Took', 'Message'].map(function (x) { return h('th', { text: x }); }))),
      h('tbody', null, tr.map(function (t) {
        var s = ms(t.StartTime), e = ms(t.EndTime);
        return h('tr', { 'data-status': t.Status },
          h('td', null, h('span', { cls: 'dot', 'data-status': t.Status }), ' ' + t.Status),
          h('td', { text: fmtTime(s) }),
          h('td', { text: e ? fmtDuration(e - s) : (done ? '\u2014' : fmtDuration(now - s) + ' so far') }),
          h('td', { text: t.StatusMessage || '' }));
      })));
  }

  /* Restarts and interruptions, when the job had any. */
  function RestartList() {
    this.el = h('div', { id: 'restarts' });
  }

  RestartList.prototype.update = function (job) {
    var tr = job.desc.SecondaryStatusTransitions || [];
    var attempt = job.rt.attempt;
    if (!tr.length) return;   /* nothing has happened yet */
    var restarts = tr.filter(function (t) { return t.Status === 'Restarting' || t.Status === 'Interrupted'; });
    var el = clear(this.el);
    if (!restarts.length && (attempt || 0) <= 1) return;
    el.appendChild(h('h3', { text: 'Restarts (' + Math.max(restarts.length, (attempt || 1) - 1) + ')' }));
    el.appendChild(h('ul', { id: 'restart-list' }, restarts.map(function (t) {
      return h('li', null, h('b', { text: fmtTime(ms(t.StartTime)) }), ' ' + t.Status + ': ' + (t.StatusMessage || 'no reason given'));
    })));
  };

  /* The job's nodes (algo-N), the host each ran on, and its ranks. */
  function JobHosts() {
    this.el = h('div', { id: 'job-hosts' });
    this.known = {};
    this.shown = [];
  }

  JobHosts.prototype.update = function (job) {
    var d = job.desc, rt = job.rt;
    var el = clear(this.el);
    var rows = this.rows(job);
    if (!rows.length) {
      el.appendChild(h('p', { cls: 'muted', text: terminal(d.TrainingJobStatus) ?
        'The job ran on no host.' : 'Waiting for hosts.' }));
      return;
    }
    var culprit = rt.first_failure || culpritFromReason(d.FailureReason);
    var ended = terminal(d.TrainingJobStatus);
    this.shown = rows;
    el.appendChild(scroller(h('table', { cls: 'grid', id: 'hosts-of-job' },
      h('thead', null, h('tr', null, ['Node', 'Host', 'Host state', 'Phase', 'Heartbeat', 'Ranks'].map(function (x) {
        return h('th', { text: x });
      }))),
      h('tbody', null, rows.map(function (x) { return jobHostRow(x, culprit, rt.first_failure, ended); })))));
  };

  /* The nodes the job holds now. Assignments go when a job ends: then the
   * ones this page saw last, else the nodes that wrote logs, as released. */
  JobHosts.prototype.rows = function (job) {
    var known = this.known;
    var rows = job.rt.hosts || [];

    rows.forEach(function (x) { known[x.algo] = x; });
    if (!rows.length) rows = Object.keys(known).sort().map(function (k) {
      var x = Object.assign({}, known[k]);
      x.released = true;
      return x;
    });
    if (!rows.length) {
      var algos = {};
      (job.rt.streams || []).forEach(function (s) { algos['algo-' + (s.host_index + 1)] = 1; });
      var c = culpritFromReason(job.desc.FailureReason);
      rows = Object.keys(algos).sort().map(function (a) {
        return { algo: a, host: c && c.algo === a ? c.host : null, released: true };
      });
    }
    return rows;
  };

  function jobHostRow(x, culprit, firstFailure, ended) {
    var failed = culprit && culprit.algo === x.algo;
    return h('tr', { 'data-algo': x.algo, cls: failed ? 'failed' : null },
      h('td', { text: x.algo }),
      h('td', null, x.host ? h('a', { href: '#/hosts', text: x.host }) : h('span', { cls: 'muted', text: 'released' })),
      h('td', { text: x.released ? 'released' : x.host_state }),
      h('td', { cls: 'phase', text: x.released || ended ? (x.phase ? 'ended (last seen: ' + x.phase + ')' : 'ended') : x.phase + (x.action !== 'run' ? ' (' + x.action + ')' : '') }),
      h('td', { text: x.released ? '\u2014' : fmtAge(x.last_heartbeat_ms_ago) }),
      h('td', { cls: 'ranks', text: rankText(x, failed && !firstFailure ? culprit.rank : null, ended) || '\u2014' }));
  }

  /* A node's ranks: running or how they ended, and the agent's error;
   * failedRank, when FailureReason names the rank that failed. */
  function rankText(x, failedRank, ended) {
    var ranks = (x.procs || []).map(function (p) {
      /* A job that ended has no running rank, whatever was seen last. */
      if (!p.exited) return 'rank ' + p.rank + (ended ? ': ended' : ': running (pid ' + p.pid + ')');
      return 'rank ' + p.rank + ': ' + (p.signal ? 'signal ' + p.signal : 'exit ' + p.exit_code);
    }).join(', ');
    if (x.error) ranks = (ranks ? ranks + '; ' : '') + 'error: ' + x.error;
    if (x.released && ranks) ranks = 'last seen: ' + ranks;
    if (failedRank != null)
      ranks = 'rank ' + failedRank + ' failed' + (ranks ? '; ' + ranks : '');
    return ranks;
  }

  /*
   * The job's hosts side by side: one row per node (algo-N \u00b7 host)
   * with the host's CPU and memory, this job's processes (CPU in % of one
   * core, resident memory) and GPUs, every row on the same y scales so
   * that a host doing something else stands out; with three or more
   * nodes, one whose job CPU (or host CPU, before the job's processes
   * are seen) is more than STRAGGLER_POINTS from the nodes' median is
   * marked "straggler?". The samples come from the job's own telemetry
   * (GET /v1/ui/jobs/NAME/telemetry, kept after the job ended): the whole
   * run first, then while the job runs those newer than the newest held,
   * every TM_POLL_MS.
   */
  var STRAGGLER_POINTS = 25;

  function JobTelemetry(name) {
    this.name = name;
    this.el = h('div', { id: 'job-telemetry' });
    this.nodes = {};    /* algo-N -> { algo, host, samples } */
    this.since = null;  /* the newest sample's time held */
    this.live = {};     /* algo-N -> the runtime view's host row */
    this.job = null;
    this.ticks = 0;
    this.done = false;  /* the ended job's run is loaded */
    var self = this;
    this.reload = serial(function () { return self.load(); });
  }

  JobTelemetry.prototype.update = function (job, rows) {
    var self = this;
    this.job = job;
    this.live = {};
    (rows || []).forEach(function (x) { if (x.algo) self.live[x.algo] = x; });
    this.reload();
  };

  JobTelemetry.prototype.tick = function () {
    this.ticks++;
    if (this.job && !this.done && this.ticks % (TM_POLL_MS / 1000) === 0) this.reload();
  };

  JobTelemetry.prototype.load = function () {
    var self = this;
    var d = this.job && this.job.desc;
    if (!d || this.done) { this.render(); return null; }
    var ended = terminal(d.TrainingJobStatus);
    var q = this.since != null ? '?since_ms=' + this.since : '';
    return api('/v1/ui/jobs/' + enc(this.name) + '/telemetry' + q).then(function (r) {
      (r.nodes || []).forEach(function (x) {
        var n = self.nodes[x.algo] = self.nodes[x.algo] || { algo: x.algo, host: null, samples: [] };
        if (x.host) n.host = x.host;
        var last = n.samples.length ? n.samples[n.samples.length - 1].ts_ms : null;
        (x.samples || []).forEach(function (v) { if (last == null || v.ts_ms > last) n.samples.push(v); });
        if (n.samples.length > TM_KEEP) n.samples.splice(0, n.samples.length - TM_KEEP);
      });
      if (r.last_ms && (self.since == null || r.last_ms > self.since)) self.since = r.last_ms;
      if (ended) self.done = true;
      self.render();
    }, function () { self.render(); });
  };

  JobTelemetry.prototype.render = function () {
    var self = this;
    var el = clear(this.el);
    var algos = Object.keys(this.nodes).sort(function (a, b) { return +a.slice(5) - +b.slice(5); });
    if (!algos.length) return;
    var ended = this.job && terminal(this.job.desc.TrainingJobStatus);
    var avg = function (vs) {
      vs = vs.filter(function (v) { return v != null; });
      return vs.length ? vs.reduce(function (a, b) { return a + b; }, 0) / vs.length : null;
    };
    var data = algos.map(function (algo) {
      var n = self.nodes[algo], xs = n.samples;
      var row = self.live[algo] || {};
      /* While the job runs, the host it runs on now and its latest
       * sample (memory in bytes, GPUs, this job's process count). */
      var t = !ended && row.host === n.host ? row.telemetry : null;
      var latest = xs.length ? xs[xs.length - 1] : null;
      var cpus = xs.map(function (v) { return v.cpu_percent; });
      var jobs = xs.map(function (v) { return v.job_cpu_percent; });
      /* The figure shown: the latest while the job runs; after, the
       * average over the run. */
      return { algo: algo, host: n.host || row.host || '?', xs: xs, t: t, latest: latest,
        cpu: ended ? avg(cpus) : latest && latest.cpu_percent,
        jobCpu: ended ? avg(jobs) : latest && latest.job_cpu_percent };
    });
    /* One y scale for every row: job CPU up to the busiest node's. */
    var jobMax = 100;
    data.forEach(function (r) { r.xs.forEach(function (v) { if (v.job_cpu_percent > jobMax) jobMax = v.job_cpu_percent; }); });
    var useJob = data.every(function (r) { return r.xs.some(function (v) { return v.job_cpu_percent > 0; }); });
    var basis = data.map(function (r) { return useJob ? r.jobCpu : r.cpu; });
    var med = median(basis);
    el.setAttribute('data-basis', useJob ? 'job' : 'host');
    el.appendChild(h('h3', { text: 'Telemetry' + (ended ? ' over the run' : '') }));
    el.appendChild(scroller(h('table', { cls: 'grid', id: 'job-telemetry-table' },
      h('thead', null, h('tr', null, ['Node', 'Host CPU', 'Memory', 'Job processes', 'GPU use'].map(function (t) {
        return h('th', { text: t });
      }))),
      h('tbody', null, data.map(function (r, i) {
        var b = basis[i];
        var straggler = data.length >= 3 && b != null && med != null && Math.abs(b - med) > STRAGGLER_POINTS;
        var t = r.t, l = r.latest;
        var ngpu = t && t.gpus ? t.gpus.length : 0;
        var gpuSum = r.xs.some(function (v) { return v.gpu_percent > 0; });
        var memFig = t ? memText(t) : l ? fmtPercent(l.mem_percent) : '\u2014';
        var procs = t && t.job ? ' \u00b7 ' + t.job.procs + (t.job.procs === 1 ? ' process' : ' processes') : '';
        return h('tr', { 'data-algo': r.algo, 'data-host': r.host, 'data-samples': String(r.xs.length),
                         'data-cpu': b == null ? '' : b.toFixed(1), cls: straggler ? 'straggler' : null },
          h('td', null, r.algo + ' \u00b7 ' + r.host,
            straggler ? h('span', { cls: 'badge straggler-badge', title: (useJob ? 'job CPU ' : 'CPU ') + fmtPercent(b) +
              ', the nodes\' median ' + fmtPercent(med), text: 'straggler?' }) : null),
          sparkCell('cpu', r.xs.map(function (v) { return v.cpu_percent; }), 0, 100,
            r.cpu == null ? '\u2014' : fmtPercent(r.cpu), 'CPU use of all the host\'s cores'),
          sparkCell('mem', r.xs.map(function (v) { return v.mem_percent; }), 0, 100, memFig,
            'memory of the whole host'),
          sparkCell('job', r.xs.map(function (v) { return v.job_cpu_percent; }), 0, jobMax,
            l ? 'CPU ' + fmtPercent(r.jobCpu) + ' of a core \u00b7 RSS ' + fmtBytes(l.job_rss_bytes) + procs : '\u2014',
            'this job\'s processes on the host'),
          !gpuSum && !ngpu ? h('td', { cls: 'tm gpu muted', text: '\u2014' }) :
            sparkCell('gpu', r.xs.map(function (v) { return ngpu ? v.gpu_percent / ngpu : v.gpu_percent; }), 0,
              ngpu ? 100 : Math.max.apply(null, r.xs.map(function (v) { return v.gpu_percent; }).concat([100])),
              l ? fmtPercent(ngpu ? l.gpu_percent / ngpu : l.gpu_percent) + (ngpu ? ' of ' + ngpu : ' (sum over GPUs)') : '\u2014',
              'GPU utilisation'));
      })))));
  };

  function median(vs) {
    vs = vs.filter(function (v) { return v != null; }).sort(function (a, b) { return a - b; });
    if (!vs.length) return null;
    var m = vs.length >> 1;
    return vs.length % 2 ? vs[m] : (vs[m - 1] + vs[m]) / 2;
  }

  /* What was asked for: hyperparameters, channels, resources, and the
   * whole DescribeTrainingJob answer folded away. */
  function RequestPanel() {
    this.el = h('div', { id: 'request' });
  }

  RequestPanel.prototype.update = function (job) {
    var d = job.desc;
    append(clear(this.el), [
      h('h3', { text: 'Hyperparameters' }), hyperparametersTable(d.HyperParameters || {}),
      h('h3', { text: 'Channels' }), channelsTable(d.InputDataConfig || []),
      h('h3', { text: 'Resources' }), resourcesList(d),
      h('details', null, h('summary', { text: 'DescribeTrainingJob' }),
        h('pre', { cls: 'json', text: JSON.stringify(d, null, 2) }))]);
  };

  function none() {
    return h('p', { cls: 'muted', text: 'None.' });
  }

  function hyperparametersTable(hp) {
    var keys = Object.keys(hp).sort();
    if (!keys.length) return none();
    return h('table', { cls: 'grid compact', id: 'hyperparameters' },
      h('tbody', null, keys.map(function (k) { return h('tr', null, h('th', { text: k }), h('td', { text: hp[k] })); })));
  }

  function channelsTable(ch) {
    if (!ch.length) return none();
    return h('table', { cls: 'grid compact', id: 'channels' },
      h('thead', null, h('tr', null, ['Name', 'Source', 'Distribution', 'Content type', 'Mode'].map(function (x) { return h('th', { text: x }); }))),
      h('tbody', null, ch.map(function (c) {
        var s = (c.DataSource && (c.DataSource.S3DataSource || c.DataSource.FileSystemDataSource)) || {};
        return h('tr', null, h('td', { text: c.ChannelName }), h('td', { text: s.S3Uri || s.DirectoryPath || '' }),
          h('td', { text: s.S3DataDistributionType || '' }), h('td', { text: c.ContentType || '' }),
          h('td', { text: c.InputMode || 'File' }));
      })));
  }

  function resourcesList(d) {
    var rc = d.ResourceConfig || {};
    var sc = d.StoppingCondition || {};
    return h('dl', { cls: 'kv', id: 'resources' },
      [['Instance type', rc.InstanceType], ['Instance count', rc.InstanceCount], ['Volume', rc.VolumeSizeInGB != null ? rc.VolumeSizeInGB + ' GB' : null],
       ['Instance groups', rc.InstanceGroups ? rc.InstanceGroups.map(function (g) { return g.InstanceGroupName + ': ' + g.InstanceCount + ' \u00d7 ' + g.InstanceType; }).join(', ') : null],
       ['Max runtime', sc.MaxRuntimeInSeconds != null ? sc.MaxRuntimeInSeconds + ' s' : null],
       ['Metric definitions', (d.AlgorithmSpecification && d.AlgorithmSpecification.MetricDefinitions || []).map(function (m) { return m.Name + ' = /' + m.Regex + '/'; }).join(', ')]]
        .filter(function (r) { return r[1] != null && r[1] !== ''; })
        .map(function (r) { return [h('dt', { text: r[0] }), h('dd', { text: r[1] })]; }));
  }

  /* Metrics: one uPlot chart per MetricDefinition, from the page's
   * /v1/ui/jobs/NAME/metrics, over time or over the report number (step,
   * the toggle above the plots), and a table of each metric's last, least
   * and greatest value under them; reload() fetches them again. */
  function MetricsPanel(name) {
    var self = this;
    this.name = name;
    this.plots = {};
    this.series = [];
    this.mode = localStorage.getItem('trainctl.plot-x') === 'step' ? 'step' : 'time';
    this.box = h('div', { id: 'metrics', cls: 'plots' });
    this.table = h('div', { id: 'final-metrics-box' });
    var toggle = h('select', { id: 'plot-x', 'aria-label': 'x axis', onchange: function () {
      self.mode = toggle.value;
      try { localStorage.setItem('trainctl.plot-x', self.mode); } catch (e) { /* private mode */ }
      self.rebuild();
    } }, h('option', { value: 'time', text: 'time' }), h('option', { value: 'step', text: 'step' }));
    toggle.value = this.mode;
    this.el = h('div', null, h('label', { cls: 'plot-mode muted' }, 'x axis: ', toggle), this.box, this.table);
    this.reload = serial(function () { return self.load(); });
    this.onresize = function () { self.resize(); };
    window.addEventListener('resize', this.onresize);
  }

  MetricsPanel.prototype.load = function () {
    var self = this;
    return api('/v1/ui/jobs/' + enc(this.name) + '/metrics').then(function (r) {
      self.hostNames = r.hosts || [];
      self.update(r.metrics);
    }, function () {});
  };

  MetricsPanel.prototype.width = function () {
    var w = this.box.clientWidth || 800;
    return Math.max(280, Math.min(w - 8, w > 900 ? (w - 24) / 2 : w - 8));
  };

  /*
   * The hosts that reported points of series s: a point is [ms, value,
   * host index into the answer's `hosts`]; old points have no index (an
   * unknown host). [] when at most one host did: then one line, as ever.
   */
  function pointHosts(s) {
    var seen = {}, keys = [];
    s.points.forEach(function (p) {
      var k = p.length > 2 && p[2] != null ? String(p[2]) : '?';
      if (!seen[k]) { seen[k] = 1; keys.push(k); }
    });
    if (keys.length < 2) return [];
    return keys.sort(function (a, b) { return a === '?' ? 1 : b === '?' ? -1 : a - b; });
  }

  function hostLabel(names, k) {
    return k === '?' ? 'unknown host' : names[+k] || 'host ' + (+k + 1);
  }

  /* The points of series s as uPlot data: x in seconds or report numbers
   * (each host's own when there are several), one y column per host. */
  function plotData(s, mode, hosts) {
    if (!hosts || !hosts.length) {
      var xs = s.points.map(function (p, i) { return mode === 'step' ? i + 1 : p[0] / 1000; });
      return [xs, s.points.map(function (p) { return p[1]; })];
    }
    var tables = hosts.map(function (k) {
      var pts = s.points.filter(function (p) { return (p.length > 2 && p[2] != null ? String(p[2]) : '?') === k; });
      return [pts.map(function (p, i) { return mode === 'step' ? i + 1 : p[0] / 1000; }),
              pts.map(function (p) { return p[1]; })];
    });
    return uPlot.join(tables);
  }

  MetricsPanel.prototype.rebuild = function () {
    Object.keys(this.plots).forEach(function (k) { this.plots[k].u.destroy(); }, this);
    this.plots = {};
    clear(this.box);
    this.update(this.series);
  };

  MetricsPanel.prototype.update = function (series) {
    var self = this;
    var names = this.hostNames || [];
    this.series = series;
    if (!series.length) {
      clear(this.box).appendChild(h('p', { cls: 'muted', text: 'The job has no MetricDefinitions.' }));
      return;
    }
    series.forEach(function (s, i) {
      var hosts = pointHosts(s);
      var labels = hosts.map(function (k) { return hostLabel(names, k); });
      var shape = labels.join(',');
      var data = plotData(s, self.mode, hosts);
      var p = self.plots[s.name];
      if (p && p.shape !== shape) {
        /* A new host reported: new series, so a new chart. */
        p.u.destroy();
        var old = p.box;
        p = self.plots[s.name] = self.plot(s.name, i, data, labels);
        self.box.replaceChild(p.box, old);
      } else if (!p) {
        p = self.plots[s.name] = self.plot(s.name, i, data, labels);
        self.box.appendChild(p.box);
      } else {
        p.u.setData(data);
      }
      p.shape = shape;
      p.box.setAttribute('data-points', String(s.points.length));
      p.box.setAttribute('data-mode', self.mode);
      p.box.setAttribute('data-series', String(Math.max(1, labels.length)));
      p.box.setAttribute('data-hosts', shape);
      p.box.classList.toggle('empty', !s.points.length);
      var last = s.points.length ? s.points[s.points.length - 1][1] : null;
      p.box.setAttribute('data-last', last == null ? '' : String(last));
    });
    clear(this.table).appendChild(finalMetricsTable(series));
  };

  function finalMetricsTable(series) {
    return h('table', { cls: 'grid compact', id: 'final-metrics' },
      h('thead', null, h('tr', null, ['Metric', 'Final', 'Min', 'Max', 'Reports'].map(function (x) { return h('th', { text: x }); }))),
      h('tbody', null, series.map(function (s) {
        var ys = s.points.map(function (p) { return p[1]; });
        return h('tr', { 'data-metric': s.name }, h('th', { text: s.name }),
          h('td', { cls: 'final', text: ys.length ? fmtValue(ys[ys.length - 1]) : '\u2014' }),
          h('td', { text: ys.length ? fmtValue(Math.min.apply(null, ys)) : '\u2014' }),
          h('td', { text: ys.length ? fmtValue(Math.max.apply(null, ys)) : '\u2014' }),
          h('td', { text: ys.length }));
      })));
  }

  /* A legend value: the hovered point's, else the series' last one. */
  function legendValue(fmt) {
    return function (u, v, si, idx) {
      if (v == null && idx == null) {
        var d = u.data[si] || [];
        for (var i = d.length - 1; i >= 0 && v == null; i--) v = d[i];
      }
      return v == null ? '\u2014' : fmt(v);
    };
  }

  /* uPlot options of a chart over time or step: the legend names the x
   * value of the point under the cursor (or of the last point). */
  function plotOpts(title, mode, width, series) {
    return {
      title: title,
      width: width,
      height: 220,
      scales: { x: mode === 'step' ? { time: false, range: stepRange } : { time: true, range: timeRange } },
      series: [{ label: mode === 'step' ? 'Step' : 'Time', value: legendValue(function (v) {
        return mode === 'step' ? String(v) : fmtTime(v * 1000);
      }) }].concat(series),
      /* Report numbers are whole: no ticks between them. */
      axes: [mode === 'step' ? { incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 1e4, 2e4, 5e4, 1e5] } : {},
             { size: 60 }],
      /* The x span shown, for a look from outside (the tests). */
      hooks: { setScale: [function (u, key) {
        if (key === 'x' && u.scales.x.max != null)
          u.root.setAttribute('data-x-span', String(u.scales.x.max - u.scales.x.min));
      }] }
    };
  }

  /* A new chart of `data` for metric `name`, the i-th of the job's: one
   * line, or one per host (labels) with a colour each, named in the
   * legend with the hovered value. The caller places p.box. */
  MetricsPanel.prototype.plot = function (name, i, data, labels) {
    var box = h('div', { cls: 'plot', 'data-metric': name });
    var empty = this.box.querySelector('p.muted');
    if (empty) this.box.removeChild(empty);
    var series = labels && labels.length ? labels.map(function (l, k) {
      return { label: l, stroke: PLOT_COLORS[k % PLOT_COLORS.length], width: 2, spanGaps: true,
               points: { show: true, size: 4 }, value: legendValue(fmtValue) };
    }) : [{ label: name, stroke: PLOT_COLORS[i % PLOT_COLORS.length], width: 2,
            points: { show: true, size: 4 }, value: legendValue(fmtValue) }];
    /* uPlot measures its box: lay it out first, then draw. */
    this.box.appendChild(box);
    var u = new uPlot(plotOpts(name, this.mode, this.width(), series), data, box);
    this.box.removeChild(box);
    return { u: u, box: box };
  };

  /* Time scaled to the data: one point (or none) gets a few seconds
   * either side, not a window much wider than the data. */
  function timeRange(u, min, max) {
    if (min == null || max == null) {
      var now = Date.now() / 1000;
      return [now - 60, now];
    }
    var pad = max - min < 0.001 ? 1 : (max - min) * 0.03;
    return [min - pad, max + pad];
  }

  function stepRange(u, min, max) {
    if (min == null || max == null) return [0, 1];
    return [Math.min(min, 1) - (max - min < 1 ? 1 : 0), max + (max - min < 1 ? 1 : 0)];
  }

  MetricsPanel.prototype.resize = function () {
    var w = this.width();
    Object.keys(this.plots).forEach(function (k) { this.plots[k].u.setSize({ width: w, height: 220 }); }, this);
  };

  MetricsPanel.prototype.destroy = function () {
    window.removeEventListener('resize', this.onresize);
    Object.keys(this.plots).forEach(function (k) { this.plots[k].u.destroy(); }, this);
  };

  /*
   * Compare: the same metric of several jobs on one plot (by step, so
   * runs that started at different times line up) and the hyperparameters
   * that differ between them.
   */
  function CompareView(root, names, metric) {
    var self = this;
    this.names = names;
    this.metric = metric || '';
    this.u = null;
    this.data = null;
    this.err = h('div');
    this.sel = h('select', { id: 'compare-metric', 'aria-label': 'metric', onchange: function () {
      self.metric = self.sel.value;
      history.replaceState(null, '', '#/compare?jobs=' + self.names.map(enc).join(',') + '&metric=' + enc(self.metric));
      self.draw();
    } });
    this.plotBox = h('div', { id: 'compare-plot', cls: 'plot' });
    this.diff = h('div', { id: 'hp-diff-box' });
    root.appendChild(h('div', null,
      h('p', { cls: 'crumbs' }, h('a', { href: '#/jobs', text: 'Training jobs' }), ' / compare'),
      this.err,
      card('Compare ' + names.length + ' jobs', [h('div', { cls: 'toolbar' }, h('label', { cls: 'muted' }, 'metric ', this.sel)), this.plotBox]),
      card('Hyperparameters that differ', this.diff)));
    if (names.length < 2) { this.err.appendChild(errorBox({ message: 'Pick at least two jobs to compare.' })); return; }
    Promise.all(names.map(function (n) {
      return Promise.all([api('/v1/training-jobs/' + enc(n)), api('/v1/ui/jobs/' + enc(n) + '/metrics')]);
    })).then(function (r) {
      self.data = r.map(function (x, i) { return { name: names[i], desc: x[0], metrics: x[1].metrics }; });
      self.render();
    }, function (e) { self.err.appendChild(errorBox(e)); });
  }

  CompareView.prototype.render = function () {
    var self = this;
    var seen = {};
    this.data.forEach(function (j) { j.metrics.forEach(function (m) { seen[m.name] = 1; }); });
    var metrics = Object.keys(seen);
    clear(this.sel);
    metrics.forEach(function (m) { self.sel.appendChild(h('option', { value: m, text: m })); });
    if (metrics.indexOf(this.metric) < 0) this.metric = metrics[0] || '';
    this.sel.value = this.metric;
    this.draw();
    clear(this.diff).appendChild(hyperparameterDiff(this.data));
  };

  CompareView.prototype.draw = function () {
    var self = this;
    if (this.u) { this.u.destroy(); this.u = null; }
    clear(this.plotBox);
    if (!this.metric) { this.plotBox.appendChild(h('p', { cls: 'muted', text: 'These jobs have no metrics.' })); return; }
    var ys = this.data.map(function (j) {
      var m = j.metrics.filter(function (x) { return x.name === self.metric; })[0];
      /* A metric several hosts reported: the first host's reports. */
      var hosts = m ? pointHosts(m) : [];
      var pts = m ? m.points.filter(function (p) {
        return !hosts.length || (p.length > 2 && p[2] != null ? String(p[2]) : '?') === hosts[0];
      }) : [];
      return pts.map(function (p) { return p[1]; });
    });
    var n = Math.max.apply(null, ys.map(function (y) { return y.length; }));
    var xs = [];
    for (var i = 1; i <= n; i++) xs.push(i);
    var data = [xs].concat(ys.map(function (y) { return xs.map(function (x) { return x <= y.length ? y[x - 1] : null; }); }));
    var w = Math.max(280, (this.plotBox.clientWidth || 800) - 8);
    this.u = new uPlot(plotOpts(this.metric, 'step', w, this.data.map(function (j, k) {
      return { label: j.name, stroke: PLOT_COLORS[k % PLOT_COLORS.length], width: 2, points: { show: true, size: 4 },
               value: legendValue(fmtValue) };
    })), data, this.plotBox);
    this.plotBox.setAttribute('data-metric', this.metric);
    this.plotBox.setAttribute('data-series', String(ys.filter(function (y) { return y.length; }).length));
  };

  CompareView.prototype.destroy = function () {
    if (this.u) this.u.destroy();
  };

  /* Rows of the hyperparameters whose values are not the same in every job. */
  function hyperparameterDiff(jobs) {
    var keys = {};
    jobs.forEach(function (j) { Object.keys(j.desc.HyperParameters || {}).forEach(function (k) { keys[k] = 1; }); });
    var differ = Object.keys(keys).sort().filter(function (k) {
      var v = jobs.map(function (j) { return (j.desc.HyperParameters || {})[k]; });
      return v.some(function (x) { return x !== v[0]; });
    });
    if (!differ.length) return h('p', { cls: 'muted', id: 'hp-diff', text: 'The jobs have the same hyperparameters.' });
    return scroller(h('table', { cls: 'grid compact', id: 'hp-diff' },
      h('thead', null, h('tr', null, h('th', { text: 'Hyperparameter' }), jobs.map(function (j) { return h('th', { text: j.name }); }))),
      h('tbody', null, differ.map(function (k) {
        return h('tr', { 'data-hp': k }, h('th', { text: k }), jobs.map(function (j) {
          var v = (j.desc.HyperParameters || {})[k];
          return h('td', { text: v == null ? '\u2014' : v });
        }));
      }))));
  }

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
  function LogsPanel(name) {
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

  /* ------------------------------------------------------ tuning jobs */

  /*
   * Hyperparameter tuning jobs: the list (/v1/ui/tuning-jobs) and one
   * tuning job (/v1/ui/tuning-jobs/NAME: DescribeHyperParameterTuningJob
   * with every training job's summary), with its training jobs, the
   * objective of each over time, the learning curves of the newest ones
   * (the job view's /v1/ui/jobs/NAME/metrics) and a scatter per tuned
   * hyperparameter. While a tuning job runs the view reloads on every
   * change and at least every 2 s.
   */

  var TUNING_RELOAD_MS = 2000;
  var TUNING_CURVES_MAX = 24;
  var PLOT_COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2',
                     '#ca8a04', '#db2777', '#4f46e5', '#059669'];

  function counters(c) {
    c = c || {};
    return ['Completed', 'InProgress', 'Stopped', 'RetryableError', 'NonRetryableError']
      .map(function (k) { return (c[k] || 0) + ' ' + k; }).join(', ');
  }

  function objectiveOf(s) {
    var m = s && s.FinalHyperParameterTuningJobObjectiveMetric;
    return m && typeof m.Value === 'number' ? m.Value : null;
  }

  function fmtValue(v) {
    if (v == null) return '\u2014';
    return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(+v.toPrecision(6));
  }

  function TuningJobsView(root) {
    var self = this;
    this.rows = [];
    this.tbody = h('tbody');
    this.err = h('div');
    this.count = h('span', { cls: 'muted', id: 'tuning-count' });
    this.reload = serial(function () { return self.load(); });
    root.appendChild(h('section', { cls: 'card' },
      h('div', { cls: 'toolbar' }, h('h1', { text: 'Tuning jobs' }), this.count),
      this.err,
      h('table', { id: 'tuning-table', cls: 'grid' },
        h('thead', null, h('tr', null,
          ['Name', 'Status', 'Strategy', 'Training jobs', 'Objectives', 'Created', 'Duration'].map(function (t) {
            return h('th', { text: t });
          }))),
        this.tbody)));
    this.reload();
  }

  TuningJobsView.prototype.load = function () {
    var self = this;
    return api('/v1/ui/tuning-jobs').then(function (r) {
      clear(self.err);
      self.rows = (r.HyperParameterTuningJobSummaries || []).slice().sort(function (a, b) {
        return (b.CreationTime || 0) - (a.CreationTime || 0);
      });
      self.render();
    }, function (e) {
      clear(self.err).appendChild(errorBox(e));
    });
  };

  function tuningDuration(t) {
    var end = ms(t.HyperParameterTuningEndTime) ||
      (terminal(t.HyperParameterTuningJobStatus) ? ms(t.LastModifiedTime) : Date.now());
    return end - ms(t.CreationTime);
  }

  TuningJobsView.prototype.render = function () {
    var tbody = clear(this.tbody);
    this.count.textContent = this.rows.length + (this.rows.length === 1 ? ' tuning job' : ' tuning jobs');
    if (!this.rows.length) {
      tbody.appendChild(h('tr', null, h('td', { colspan: 7, cls: 'muted', text: 'No tuning jobs yet.' })));
      return;
    }
    this.rows.forEach(function (t) {
      var c = t.TrainingJobStatusCounters || {};
      var o = t.ObjectiveStatusCounters || {};
      var max = t.ResourceLimits && t.ResourceLimits.MaxNumberOfTrainingJobs;
      tbody.appendChild(h('tr', { 'data-tuning': t.HyperParameterTuningJobName, 'data-status': t.HyperParameterTuningJobStatus },
        h('td', null, h('a', { href: '#/tuning-jobs/' + enc(t.HyperParameterTuningJobName), text: t.HyperParameterTuningJobName })),
        h('td', { cls: 'status' }, badge(t.HyperParameterTuningJobStatus)),
        h('td', { text: t.Strategy }),
        h('td', { cls: 'counters', title: counters(c),
          text: (c.Completed || 0) + ' completed' + (max ? ' of ' + max : '') +
            (c.InProgress ? ', ' + c.InProgress + ' running' : '') +
            ((c.NonRetryableError || 0) + (c.RetryableError || 0) ? ', ' + ((c.NonRetryableError || 0) + (c.RetryableError || 0)) + ' failed' : '') +
            (c.Stopped ? ', ' + c.Stopped + ' stopped' : '') }),
        h('td', { text: (o.Succeeded || 0) + ' succeeded' + (o.Pending ? ', ' + o.Pending + ' pending' : '') +
          (o.Failed ? ', ' + o.Failed + ' failed' : '') }),
        h('td', { text: fmtTime(ms(t.CreationTime)) }),
        h('td', { cls: 'duration', text: fmtDuration(tuningDuration(t)) })));
    });
  };

  TuningJobsView.prototype.changed = function (c) {
    if (c.jobs || c.periodic) this.reload();
  };

  TuningJobsView.prototype.tick = function () {
    var running = this.rows.some(function (t) { return !terminal(t.HyperParameterTuningJobStatus); });
    this.ticks = (this.ticks || 0) + 1;
    if (running && this.ticks % (TUNING_RELOAD_MS / 1000) === 0) this.reload();
  };

  function TuningJobView(root, name) {
    var self = this;
    this.name = name;
    this.t = null;
    this.ticks = 0;
    this.plots = {};
    this.curves = {};   /* training job -> { status, points } */
    this.reload = serial(function () { return self.load(); });
    this.err = h('div');
    this.head = h('div', { id: 'tuning-head' });
    this.summary = h('dl', { id: 'tuning-summary', cls: 'kv' });
    this.failure = h('div');
    this.best = h('div', { id: 'best-job' });
    this.objective = h('div', { id: 'objective-plots', cls: 'plots' });
    this.params = h('div', { id: 'param-plots', cls: 'plots' });
    this.table = h('div', { id: 'tuning-training-jobs' });
    this.request = h('div', { id: 'tuning-request' });
    this.onresize = function () { self.drawPlots(true); };
    window.addEventListener('resize', this.onresize);
    root.appendChild(h('div', null,
      h('p', { cls: 'crumbs' }, h('a', { href: '#/tuning-jobs', text: 'Tuning jobs' }), ' / ', name),
      this.err,
      card(null, [this.head, this.failure, this.summary]),
      card('Best training job', this.best),
      card('Objective', this.objective),
      card('Hyperparameters against the objective', this.params),
      card('Training jobs', this.table),
      card('Request', this.request)));
    this.reload();
  }

  TuningJobView.prototype.destroy = function () {
    window.removeEventListener('resize', this.onresize);
    Object.keys(this.plots).forEach(function (k) { this.plots[k].u.destroy(); }, this);
    this.plots = {};
  };

  TuningJobView.prototype.load = function () {
    var self = this;
    return api('/v1/ui/tuning-jobs/' + enc(this.name)).then(function (t) {
      clear(self.err);
      self.t = t;
      return self.loadCurves().then(function () { self.render(); });
    }, function (e) {
      clear(self.err).appendChild(errorBox(e));
    });
  };

  /* The objective metric's series of the newest training jobs: once for
   * an ended job, on every load for a running one. */
  TuningJobView.prototype.loadCurves = function () {
    var self = this;
    var metric = this.metric();
    var jobs = (this.t.TrainingJobSummaries || []).slice().sort(function (a, b) {
      return (b.CreationTime || 0) - (a.CreationTime || 0);
    }).slice(0, TUNING_CURVES_MAX);
    return Promise.all(jobs.map(function (s) {
      var have = self.curves[s.TrainingJobName];
      if (have && terminal(have.status) && have.loaded) return null;
      return api('/v1/ui/jobs/' + enc(s.TrainingJobName) + '/metrics').then(function (r) {
        var series = (r.metrics || []).filter(function (m) { return m.name === metric; })[0];
        self.curves[s.TrainingJobName] = { status: s.TrainingJobStatus, loaded: true,
          points: series ? series.points : [] };
      }, function () {});
    }));
  };

  TuningJobView.prototype.metric = function () {
    var cfg = this.t.HyperParameterTuningJobConfig || {};
    var o = cfg.HyperParameterTuningJobObjective ||
      (this.t.TrainingJobDefinition || {}).TuningObjective || {};
    return o.MetricName;
  };

  TuningJobView.prototype.maximize = function () {
    var cfg = this.t.HyperParameterTuningJobConfig || {};
    var o = cfg.HyperParameterTuningJobObjective ||
      (this.t.TrainingJobDefinition || {}).TuningObjective || {};
    return o.Type === 'Maximize';
  };

  /* The tuned hyperparameters: [{ name, kind, values (categorical), log }]. */
  TuningJobView.prototype.ranges = function () {
    var t = this.t;
    var defs = t.TrainingJobDefinition ? [t.TrainingJobDefinition] : (t.TrainingJobDefinitions || []);
    var all = [(t.HyperParameterTuningJobConfig || {}).ParameterRanges || {}]
      .concat(defs.map(function (d) { return d.HyperParameterRanges || {}; }));
    var out = [], seen = {};
    all.forEach(function (r) {
      [['ContinuousParameterRanges', 'continuous'], ['IntegerParameterRanges', 'integer'],
       ['CategoricalParameterRanges', 'categorical']].forEach(function (k) {
        (r[k[0]] || []).forEach(function (p) {
          if (seen[p.Name]) return;
          seen[p.Name] = true;
          var lo = +p.MinValue, hi = +p.MaxValue;
          out.push({ name: p.Name, kind: k[1], values: p.Values || null, lo: lo, hi: hi,
            log: p.ScalingType === 'Logarithmic' ||
              ((!p.ScalingType || p.ScalingType === 'Auto') && lo > 0 && hi >= 100 * lo) });
        });
      });
    });
    return out;
  };

  TuningJobView.prototype.render = function () {
    var t = this.t;
    var status = t.HyperParameterTuningJobStatus;
    var cfg = t.HyperParameterTuningJobConfig || {};
    var lim = cfg.ResourceLimits || {};
    var oc = t.ObjectiveStatusCounters || {};

    clear(this.head).appendChild(h('div', { cls: 'toolbar' },
      h('h1', { id: 'tuning-name', text: t.HyperParameterTuningJobName }),
      h('span', { id: 'tuning-status', 'data-status': status }, badge(status))));
    clear(this.failure);
    if (t.FailureReason)
      this.failure.appendChild(h('div', { id: 'failure', cls: 'failure' }, 'Reason: ',
        h('span', { id: 'failure-reason', text: t.FailureReason })));
    var end = ms(t.HyperParameterTuningEndTime);
    var rows = [
      ['Strategy', cfg.Strategy],
      ['Objective', this.metric() ? (this.maximize() ? 'Maximize ' : 'Minimize ') + this.metric() : null],
      ['Training jobs', counters(t.TrainingJobStatusCounters)],
      ['Objectives', (oc.Succeeded || 0) + ' Succeeded, ' + (oc.Pending || 0) + ' Pending, ' + (oc.Failed || 0) + ' Failed'],
      ['Limits', (lim.MaxNumberOfTrainingJobs != null ? lim.MaxNumberOfTrainingJobs + ' training jobs, ' : '') +
        (lim.MaxParallelTrainingJobs || 1) + ' in parallel' +
        (lim.MaxRuntimeInSeconds ? ', ' + lim.MaxRuntimeInSeconds + ' s' : '')],
      ['Early stopping', cfg.TrainingJobEarlyStoppingType || 'Off'],
      ['Random seed', cfg.RandomSeed],
      ['Created', fmtTime(ms(t.CreationTime))],
      ['Ended', end ? fmtTime(end) : null],
      ['Duration', fmtDuration((end || (terminal(status) ? ms(t.LastModifiedTime) : Date.now())) - ms(t.CreationTime))],
      ['ARN', t.HyperParameterTuningJobArn]
    ];
    var dl = clear(this.summary);
    rows.forEach(function (r) {
      if (r[1] == null || r[1] === '') return;
      dl.appendChild(h('dt', { text: r[0] }));
      dl.appendChild(h('dd', { 'data-field': r[0], text: r[1] }));
    });
    this.renderBest();
    this.renderTable();
    append(clear(this.request), h('details', null, h('summary', { text: 'DescribeHyperParameterTuningJob' }),
      h('pre', { cls: 'json', text: JSON.stringify(t, function (k, v) {
        return k === 'TrainingJobSummaries' ? undefined : v;
      }, 2) })));
    this.drawPlots(false);
  };

  TuningJobView.prototype.renderBest = function () {
    var b = this.t.BestTrainingJob;
    var el = clear(this.best);
    if (!b) {
      el.appendChild(h('p', { cls: 'muted', text: terminal(this.t.HyperParameterTuningJobStatus) ?
        'No training job produced the objective metric.' : 'None yet.' }));
      return;
    }
    var m = b.FinalHyperParameterTuningJobObjectiveMetric || {};
    var hp = b.TunedHyperParameters || {};
    el.setAttribute('data-job', b.TrainingJobName);
    append(el, [
      h('div', { cls: 'toolbar' },
        h('a', { id: 'best-job-link', href: '#/jobs/' + enc(b.TrainingJobName), text: b.TrainingJobName }),
        badge(b.TrainingJobStatus),
        h('span', null, (m.MetricName || 'objective') + ' ', h('b', { id: 'best-objective', text: fmtValue(objectiveOf(b)) }))),
      hyperparametersTable(hp)]);
  };

  TuningJobView.prototype.renderTable = function () {
    var t = this.t;
    var names = this.ranges().map(function (r) { return r.name; });
    var best = t.BestTrainingJob && t.BestTrainingJob.TrainingJobName;
    var jobs = (t.TrainingJobSummaries || []).slice().sort(function (a, b) {
      return (a.CreationTime || 0) - (b.CreationTime || 0);
    });
    var el = clear(this.table);
    if (!jobs.length) { el.appendChild(h('p', { cls: 'muted', text: 'No training jobs yet.' })); return; }
    el.appendChild(h('table', { cls: 'grid compact', id: 'tuning-jobs-table' },
      h('thead', null, h('tr', null, ['Training job', 'Status', 'Objective', 'Objective status']
        .concat(names).concat(['Created', 'Duration']).map(function (x) { return h('th', { text: x }); }))),
      h('tbody', null, jobs.map(function (s) {
        var hp = s.TunedHyperParameters || {};
        var start = ms(s.TrainingStartTime) || ms(s.CreationTime);
        var end = ms(s.TrainingEndTime);
        return h('tr', { 'data-job': s.TrainingJobName, 'data-status': s.TrainingJobStatus,
                         'data-objective-status': s.ObjectiveStatus || '',
                         cls: (s.TrainingJobName === best ? 'best' : '') + (s.TrainingJobStatus === 'Failed' ? ' failed' : '') },
          h('td', null, h('a', { href: '#/jobs/' + enc(s.TrainingJobName), text: s.TrainingJobName }),
            s.TrainingJobName === best ? h('span', { cls: 'best-mark', title: 'best training job', text: ' \u2605' }) : null),
          h('td', { cls: 'status' }, badge(s.TrainingJobStatus)),
          h('td', { cls: 'objective', text: fmtValue(objectiveOf(s)) }),
          h('td', { cls: 'objective-status', text: s.ObjectiveStatus || '\u2014', title: s.FailureReason || '' }),
          names.map(function (n) { return h('td', { 'data-param': n, text: hp[n] != null ? hp[n] : '\u2014' }); }),
          h('td', { text: fmtTime(ms(s.CreationTime)) }),
          h('td', { text: fmtDuration((end || (terminal(s.TrainingJobStatus) ? start : Date.now())) - start) }));
      }))));
  };

  /* [min, max] widened by frac of the span (or of the value), so that
   * points at the ends are drawn whole. */
  function padded(min, max, frac) {
    if (min == null || max == null) return [0, 1];
    var span = max - min || Math.abs(max) || 1;
    return [min - span * frac, max + span * frac];
  }

  function paddedTime(u, min, max) {
    if (min == null || max == null) return timeRange(u, min, max);
    return max - min < 1 ? [min - 30, max + 30] : padded(min, max, 0.04);
  }

  function paddedY(u, min, max) {
    return padded(min, max, 0.08);
  }

  /* Width of a plot in el, n to a row. */
  function plotWidth(el, n) {
    var w = el.clientWidth || 800;
    return Math.max(240, Math.floor((w - 12 * (n - 1)) / n) - 2);
  }

  /*
   * (Re)draws the plots: a plot whose shape (series, axes) is unchanged
   * only gets its new data; force redraws all at their new size.
   */
  TuningJobView.prototype.drawPlots = function (force) {
    if (!this.t) return;
    var self = this;
    var specs = [this.objectiveSpec(), this.curvesSpec()].concat(this.paramSpecs());
    var wanted = {};
    specs.forEach(function (s) {
      wanted[s.key] = true;
      var p = self.plots[s.key];
      var parent = s.key.indexOf('param:') === 0 ? self.params : self.objective;
      if (p && (force || p.shape !== s.shape)) {
        p.u.destroy();
        p.box.parentNode.removeChild(p.box);
        p = null;
      }
      if (!p) {
        var box = h('div', s.attrs);
        parent.appendChild(box);
        s.opts.width = plotWidth(parent, s.perRow);
        p = self.plots[s.key] = { u: new uPlot(s.opts, s.data, box), box: box, shape: s.shape };
      } else {
        p.u.setData(s.data);
      }
      p.box.setAttribute('data-points', String(s.points));
      Object.keys(s.live || {}).forEach(function (k) { p.box.setAttribute(k, s.live[k]); });
      p.box.classList.toggle('empty', !s.points);
    });
    Object.keys(this.plots).forEach(function (k) {
      if (wanted[k]) return;
      self.plots[k].u.destroy();
      self.plots[k].box.parentNode.removeChild(self.plots[k].box);
      delete self.plots[k];
    });
    if (!specs.some(function (s) { return s.key.indexOf('param:') === 0; }) && !this.params.firstChild)
      this.params.appendChild(h('p', { cls: 'muted', text: 'No tuned hyperparameters.' }));
  };

  /* The objective of each training job when it ended, and the best so far. */
  TuningJobView.prototype.objectiveSpec = function () {
    var max = this.maximize();
    var pts = (this.t.TrainingJobSummaries || []).filter(function (s) {
      return objectiveOf(s) != null;
    }).map(function (s) {
      return [(ms(s.TrainingEndTime) || ms(s.TrainingStartTime) || ms(s.CreationTime)) / 1000, objectiveOf(s)];
    }).sort(function (a, b) { return a[0] - b[0]; });
    var best = null;
    var xs = pts.map(function (p) { return p[0]; });
    var ys = pts.map(function (p) { return p[1]; });
    var bs = ys.map(function (y) {
      best = best == null || (max ? y > best : y < best) ? y : best;
      return best;
    });
    var metric = this.metric() || 'objective';
    var stepped = uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    return {
      key: 'objective', shape: 'objective', perRow: 2, points: xs.length,
      attrs: { cls: 'plot', id: 'objective-plot', 'data-plot': 'objective' },
      live: { 'data-best': best == null ? '' : String(best) },
      data: [xs, ys, bs],
      opts: {
        title: metric + ' per training job', height: 240,
        scales: { x: { time: true, range: paddedTime }, y: { range: paddedY } },
        series: [{},
          { label: metric, stroke: '#2563eb', fill: '#2563eb', width: 0, paths: function () { return null; },
            points: { show: true, size: 7, fill: '#2563eb' } },
          { label: 'best so far', stroke: '#16a34a', width: 2, paths: stepped, points: { show: false } }],
        axes: [{}, { size: 60 }]
      }
    };
  };

  /* The objective metric over time of the newest training jobs. */
  TuningJobView.prototype.curvesSpec = function () {
    var self = this;
    var metric = this.metric() || 'objective';
    var names = (this.t.TrainingJobSummaries || []).map(function (s) { return s.TrainingJobName; })
      .filter(function (n) { return self.curves[n] && self.curves[n].points.length; }).sort();
    var tables = names.map(function (n) {
      var p = self.curves[n].points;
      return [p.map(function (x) { return x[0] / 1000; }), p.map(function (x) { return x[1]; })];
    });
    var data = tables.length ? uPlot.join(tables) : [[]];
    var n = 0;
    tables.forEach(function (t) { n += t[0].length; });
    return {
      key: 'curves', shape: 'curves:' + names.join(','), perRow: 2, points: n,
      attrs: { cls: 'plot', id: 'curves-plot', 'data-plot': 'curves' },
      live: { 'data-series': String(names.length) },
      data: data,
      opts: {
        title: metric + ' while training (newest ' + TUNING_CURVES_MAX + ')', height: 240,
        legend: { show: false },
        scales: { x: { time: true, range: paddedTime }, y: { range: paddedY } },
        series: [{}].concat(names.map(function (nm, i) {
          return { label: nm.slice(nm.indexOf('-', nm.length - 14) + 1), stroke: PLOT_COLORS[i % PLOT_COLORS.length],
                   width: 1.5, spanGaps: true, points: { show: true, size: 3 } };
        })),
        axes: [{}, { size: 60 }]
      }
    };
  };

  /* One scatter per tuned hyperparameter: its value against the objective. */
  TuningJobView.prototype.paramSpecs = function () {
    var jobs = (this.t.TrainingJobSummaries || []).filter(function (s) { return objectiveOf(s) != null; });
    var metric = this.metric() || 'objective';
    return this.ranges().map(function (r) {
      var cat = r.kind === 'categorical';
      var values = r.values || [];
      var pts = jobs.map(function (s) {
        var v = (s.TunedHyperParameters || {})[r.name];
        if (v == null) return null;
        var x = cat ? values.indexOf(v) : +v;
        return x < 0 || !isFinite(x) ? null : [x, objectiveOf(s)];
      }).filter(Boolean).sort(function (a, b) { return a[0] - b[0]; });
      /* The range's own bounds: where in the space the points fall. */
      var xscale = { time: false };
      var xaxis = {};
      if (cat) {
        xscale.range = function () { return [-0.5, values.length - 0.5]; };
        xaxis.splits = function () { return values.map(function (_, i) { return i; }); };
        xaxis.values = function (u, splits) {
          return splits.map(function (i) { return values[i] != null ? values[i] : ''; });
        };
      } else if (r.log && r.lo > 0) {
        xscale.distr = 3;
        xscale.range = function () { return [r.lo / 1.25, r.hi * 1.25]; };
      } else if (r.kind === 'integer') {
        xscale.range = function () { return [r.lo - 0.5, r.hi + 0.5]; };
        xaxis.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9];
      } else if (isFinite(r.lo) && isFinite(r.hi)) {
        xscale.range = function () { return padded(r.lo, r.hi, 0.04); };
      }
      return {
        key: 'param:' + r.name, shape: r.kind + (r.log ? ':log' : '') + ':' + values.join(','), perRow: 3,
        points: pts.length,
        attrs: { cls: 'plot small', 'data-param': r.name, 'data-kind': r.kind, 'data-scale': r.log ? 'log' : 'linear' },
        data: [pts.map(function (p) { return p[0]; }), pts.map(function (p) { return p[1]; })],
        opts: {
          title: r.name + (cat ? '' : r.log ? ' (log)' : ''), height: 200,
          legend: { show: false },
          cursor: { drag: { x: false, y: false } },
          scales: { x: xscale, y: { range: paddedY } },
          series: [{ label: r.name }, { label: metric, stroke: '#9333ea', fill: '#9333ea', width: 0,
            paths: function () { return null; }, points: { show: true, size: 7, fill: '#9333ea' } }],
          axes: [xaxis, { size: 55 }]
        }
      };
    });
  };

  TuningJobView.prototype.changed = function (c) {
    if (c.jobs || c.logs || c.periodic) this.reload();
  };

  TuningJobView.prototype.tick = function () {
    this.ticks++;
    if (this.t && !terminal(this.t.HyperParameterTuningJobStatus) && this.ticks % (TUNING_RELOAD_MS / 1000) === 0)
      this.reload();
  };

  /* -------------------------------------------------------------- hosts */

  function HostsView(root) {
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
        h('td', null, h('span', { cls: 'badge', 'data-status': x.state, text: x.state })),
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

  /* ------------------------------------------------------------- router */

  function parseHash() {
    var hash = location.hash.replace(/^#/, '') || '/jobs';
    var q = {}, qi = hash.indexOf('?');
    if (qi >= 0) {
      hash.slice(qi + 1).split('&').forEach(function (kv) {
        var p = kv.split('=');
        if (p[0]) q[decodeURIComponent(p[0])] = decodeURIComponent(p[1] || '');
      });
      hash = hash.slice(0, qi);
    }
    return { parts: hash.split('/').filter(Boolean).map(decodeURIComponent), query: q };
  }

  function route() {
    var r = parseHash();
    var root = clear(document.getElementById('view'));
    if (live.view && live.view.destroy) live.view.destroy();
    var tuning = r.parts[0] === 'tuning-jobs';
    document.getElementById('nav-jobs').classList.toggle('active', r.parts[0] !== 'hosts' && !tuning);
    document.getElementById('nav-tuning').classList.toggle('active', tuning);
    document.getElementById('nav-hosts').classList.toggle('active', r.parts[0] === 'hosts');
    if (r.parts[0] === 'hosts') {
      document.title = 'Hosts \u00b7 trainctl';
      live.view = new HostsView(root);
    } else if (tuning && r.parts[1]) {
      document.title = r.parts[1] + ' \u00b7 trainctl';
      live.view = new TuningJobView(root, r.parts[1]);
    } else if (tuning) {
      document.title = 'Tuning jobs \u00b7 trainctl';
      live.view = new TuningJobsView(root);
    } else if (r.parts[0] === 'clone' && r.parts[1]) {
      document.title = 'Clone ' + r.parts[1] + ' \u00b7 trainctl';
      live.view = new CloneView(root, r.parts[1]);
    } else if (r.parts[0] === 'compare') {
      document.title = 'Compare \u00b7 trainctl';
      live.view = new CompareView(root, (r.query.jobs || '').split(',').filter(Boolean), r.query.metric);
    } else if (r.parts[0] === 'jobs' && r.parts[1]) {
      document.title = r.parts[1] + ' \u00b7 trainctl';
      live.view = new JobView(root, r.parts[1]);
    } else {
      document.title = 'Training jobs \u00b7 trainctl';
      live.view = new JobsView(root, r.query);
    }
  }

  window.addEventListener('hashchange', route);
  window.trainctl = { live: live };
  route();
  live.start();
})();
