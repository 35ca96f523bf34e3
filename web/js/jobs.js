import { clear, h } from './dom.js';
import { api, enc } from './api.js';
import { STATUSES, badge, errorBox, fmtDuration, fmtTime, terminal } from './format.js';
import { serial } from './live.js';
import { card } from './job.js';

/* ----------------------------------------------------------- jobs list */

/*
 * The jobs list: one page of /v1/ui/jobs at a time (keyset pages: the
 * tokens of the pages before this one are kept to go back), sorted by a
 * column header, filtered; the filters, sort and page size live in the
 * URL hash so a reload keeps them. Rows have Stop (InProgress), Clone,
 * and a checkbox for Compare.
 */
export var JOB_FILTERS = ['status', 'name', 'created_after', 'created_before', 'instance_type', 'tag'];
export var SORTABLE = { Name: 'name', Status: 'status', Created: 'created' };
export var PAGE_SIZES = ['25', '50', '100', '200'];

/* "2026-12-04" (a date input) to epoch ms at local midnight, and back. */
export function dateToMs(v) {
  var t = v ? new Date(v + 'T00:00:00').getTime() : NaN;
  return isNaN(t) ? '' : String(t);
}

export function msToDate(v) {
  if (!v) return '';
  var d = new Date(+v);
  var pad = function (n) { return (n < 10 ? '0' : '') + n; };
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
}

export function JobsView(root, params) {
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
export function scroller(table) {
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
export function stopJob(name, btn) {
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
export function CloneView(root, name) {
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
