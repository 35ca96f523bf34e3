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
    return fetch(path, {
      credentials: 'same-origin',
      cache: 'no-store',
      signal: opts.signal,
      headers: { 'Accept': 'application/json' }
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
      Promise.resolve().then(fn).catch(function () {}).then(function () {
        running = false;
        if (again) { again = false; run(); }
      });
    };
  }

  /* ----------------------------------------------------------- jobs list */

  function JobsView(root, params) {
    var self = this;
    this.root = root;
    this.filter = { status: params.status || '', name: params.name || '' };
    this.rows = [];
    this.reload = serial(function () { return self.load(); });

    var statusSel = h('select', { id: 'filter-status', 'aria-label': 'status',
      onchange: function () { self.filter.status = statusSel.value; self.syncHash(); self.reload(); } },
      h('option', { value: '', text: 'any status' }),
      STATUSES.map(function (s) { return h('option', { value: s, text: s }); }));
    statusSel.value = this.filter.status;
    var timer = null;
    var nameIn = h('input', { id: 'filter-name', type: 'search', placeholder: 'name contains',
      'aria-label': 'name contains', value: this.filter.name,
      oninput: function () {
        clearTimeout(timer);
        timer = setTimeout(function () { self.filter.name = nameIn.value.trim(); self.syncHash(); self.reload(); }, 250);
      } });
    this.count = h('span', { cls: 'muted', id: 'jobs-count' });
    this.tbody = h('tbody');
    this.err = h('div');
    root.appendChild(h('section', { cls: 'card' },
      h('div', { cls: 'toolbar' }, h('h1', { text: 'Training jobs' }), statusSel, nameIn, this.count),
      this.err,
      h('table', { id: 'jobs-table', cls: 'grid' },
        h('thead', null, h('tr', null,
          ['Name', 'Status', 'Secondary status', 'Instances', 'Created', 'Duration', 'Attempt'].map(function (t) {
            return h('th', { text: t });
          }))),
        this.tbody)));
    this.reload();
  }

  JobsView.prototype.syncHash = function () {
    var q = [];
    if (this.filter.status) q.push('status=' + enc(this.filter.status));
    if (this.filter.name) q.push('name=' + enc(this.filter.name));
    history.replaceState(null, '', '#/jobs' + (q.length ? '?' + q.join('&') : ''));
  };

  JobsView.prototype.load = function () {
    var self = this;
    var q = ['limit=200'];
    if (this.filter.status) q.push('status=' + enc(this.filter.status));
    if (this.filter.name) q.push('name=' + enc(this.filter.name));
    return api('/v1/ui/jobs?' + q.join('&')).then(function (r) {
      clear(self.err);
      self.rows = r.jobs;
      self.render();
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
    this.count.textContent = this.rows.length + (this.rows.length === 1 ? ' job' : ' jobs');
    if (!this.rows.length) {
      this.tbody.appendChild(h('tr', null, h('td', { colspan: 7, cls: 'muted', text: 'No training jobs match.' })));
      return;
    }
    this.rows.forEach(function (j) {
      var inst = j.instance_count + ' \u00d7 ' + (j.instance_type || 'instance groups');
      self.tbody.appendChild(h('tr', { 'data-job': j.name, 'data-status': j.status },
        h('td', null, h('a', { href: '#/jobs/' + enc(j.name), text: j.name })),
        h('td', { cls: 'status' }, badge(j.status)),
        h('td', { cls: 'secondary', text: j.secondary_status }),
        h('td', { text: inst }),
        h('td', { text: fmtTime(j.creation_ms) }),
        h('td', { cls: 'duration', text: fmtDuration(self.duration(j)) }),
        h('td', { cls: 'attempt', text: j.attempt || '\u2014' })));
    });
  };

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
    this.metrics = new MetricsPanel(name);
    this.logs = new LogsPanel(name);
    this.request = new RequestPanel();
    root.appendChild(h('div', null,
      h('p', { cls: 'crumbs' }, h('a', { href: '#/jobs', text: 'Training jobs' }), ' / ', name),
      this.err,
      card(null, [this.head.el, this.failure.el, this.summary.el]),
      card('Status transitions', [this.timeline.el, this.restarts.el]),
      card('Hosts', this.hosts.el),
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
    if (this.lastStatus && this.lastStatus !== status) this.metrics.reload();
    this.lastStatus = status;
  };

  JobView.prototype.changed = function (c) {
    if (c.jobs || c.hosts) this.reload();
    if (c.logs || c.jobs) this.metrics.reload();
  };

  JobView.prototype.tick = function () {
    if (this.job && !terminal(this.job.desc.TrainingJobStatus)) this.summary.update(this.job);
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
    var rows = [
      ['Status message', (d.SecondaryStatusTransitions || []).slice(-1).map(function (t) { return t.StatusMessage; })[0]],
      ['Created', fmtTime(created)],
      ['Training started', fmtTime(start)],
      ['Training ended', fmtTime(end)],
      ['Duration', fmtDuration((end || (terminal(d.TrainingJobStatus) ? ms(d.LastModifiedTime) : Date.now())) - created)],
      ['Training time', d.TrainingTimeInSeconds != null ? d.TrainingTimeInSeconds + ' s' : null],
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
    el.appendChild(h('table', { cls: 'grid', id: 'hosts-of-job' },
      h('thead', null, h('tr', null, ['Node', 'Host', 'Host state', 'Phase', 'Heartbeat', 'Ranks'].map(function (x) {
        return h('th', { text: x });
      }))),
      h('tbody', null, rows.map(function (x) { return jobHostRow(x, culprit, rt.first_failure); }))));
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

  function jobHostRow(x, culprit, firstFailure) {
    var failed = culprit && culprit.algo === x.algo;
    return h('tr', { 'data-algo': x.algo, cls: failed ? 'failed' : null },
      h('td', { text: x.algo }),
      h('td', null, x.host ? h('a', { href: '#/hosts', text: x.host }) : h('span', { cls: 'muted', text: 'released' })),
      h('td', { text: x.released ? 'released' : x.host_state }),
      h('td', { text: x.released ? (x.phase ? 'ended (last seen: ' + x.phase + ')' : 'ended') : x.phase + (x.action !== 'run' ? ' (' + x.action + ')' : '') }),
      h('td', { text: x.released ? '\u2014' : fmtAge(x.last_heartbeat_ms_ago) }),
      h('td', { text: rankText(x, failed && !firstFailure ? culprit.rank : null) || '\u2014' }));
  }

  /* A node's ranks: running or how they ended, and the agent's error;
   * failedRank, when FailureReason names the rank that failed. */
  function rankText(x, failedRank) {
    var ranks = (x.procs || []).map(function (p) {
      if (!p.exited) return 'rank ' + p.rank + ': running (pid ' + p.pid + ')';
      return 'rank ' + p.rank + ': ' + (p.signal ? 'signal ' + p.signal : 'exit ' + p.exit_code);
    }).join(', ');
    if (x.error) ranks = (ranks ? ranks + '; ' : '') + 'error: ' + x.error;
    if (x.released && ranks) ranks = 'last seen: ' + ranks;
    if (failedRank != null)
      ranks = 'rank ' + failedRank + ' failed' + (ranks ? '; ' + ranks : '');
    return ranks;
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
   * /v1/ui/jobs/NAME/metrics; reload() fetches them again. */
  function MetricsPanel(name) {
    var self = this;
    this.name = name;
    this.plots = {};
    this.el = h('div', { id: 'metrics', cls: 'plots' });
    this.reload = serial(function () { return self.load(); });
    this.onresize = function () { self.resize(); };
    window.addEventListener('resize', this.onresize);
  }

  MetricsPanel.prototype.load = function () {
    var self = this;
    return api('/v1/ui/jobs/' + enc(this.name) + '/metrics').then(function (r) {
      self.update(r.metrics);
    }, function () {});
  };

  MetricsPanel.prototype.width = function () {
    var w = this.el.clientWidth || 800;
    return Math.max(280, Math.min(w - 8, w > 900 ? (w - 24) / 2 : w - 8));
  };

  MetricsPanel.prototype.update = function (series) {
    var self = this;
    if (!series.length) {
      clear(this.el).appendChild(h('p', { cls: 'muted', text: 'The job has no MetricDefinitions.' }));
      return;
    }
    series.forEach(function (s, i) {
      var xs = s.points.map(function (p) { return p[0] / 1000; });
      var ys = s.points.map(function (p) { return p[1]; });
      var p = self.plots[s.name];
      if (!p) p = self.plots[s.name] = self.plot(s.name, i, [xs, ys]);
      else p.u.setData([xs, ys]);
      p.box.setAttribute('data-points', String(xs.length));
      p.box.classList.toggle('empty', !xs.length);
      var last = ys.length ? ys[ys.length - 1] : null;
      p.box.setAttribute('data-last', last == null ? '' : String(last));
    });
  };

  /* A new chart of `data` for metric `name`, the i-th of the job's. */
  MetricsPanel.prototype.plot = function (name, i, data) {
    var box = h('div', { cls: 'plot', 'data-metric': name });
    var empty = this.el.querySelector('p.muted');
    if (empty) this.el.removeChild(empty);
    this.el.appendChild(box);
    var colors = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2'];
    var u = new uPlot({
      title: name,
      width: this.width(),
      height: 220,
      scales: { x: { time: true, range: timeRange } },
      series: [{}, { label: name, stroke: colors[i % colors.length], width: 2,
                     points: { show: true, size: 4 } }],
      axes: [{}, { size: 60 }]
    }, data, box);
    return { u: u, box: box };
  };

  /* One point (or none) would stretch the time axis over years. */
  function timeRange(u, min, max) {
    if (min == null || max == null) {
      var now = Date.now() / 1000;
      return [now - 60, now];
    }
    return max - min < 1 ? [min - 30, max + 30] : [min, max];
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
   * Logs: a card with a tab per stream and the lines of the open one,
   * followed with the logs route's long-poll. update(job) adds the tabs
   * of new streams and opens the first, or follows the open one again.
   */
  function LogsPanel(name) {
    var self = this;
    this.name = name;
    this.status = null;
    this.stream = null;
    this.offset = 0;
    this.follow = true;
    this.gen = 0;
    this.abort = null;
    this.running = false;   /* or the generation being read */
    this.tabs = h('div', { cls: 'tabs', id: 'log-tabs' });
    this.pre = h('pre', { id: 'log', cls: 'log' });
    var followBox = h('input', { type: 'checkbox', id: 'log-follow', checked: 'checked',
      onchange: function () { self.follow = followBox.checked; self.open(self.stream, true); } });
    this.el = h('section', { cls: 'card' },
      h('div', { cls: 'toolbar' }, h('h2', { text: 'Logs' }), this.tabs,
        h('label', { cls: 'follow' }, followBox, ' follow')),
      this.pre);
  }

  LogsPanel.prototype.update = function (job) {
    var self = this;
    var streams = job.rt.streams || [];
    var have = {};
    this.status = job.desc.TrainingJobStatus;
    Array.prototype.forEach.call(this.tabs.children, function (b) { have[b.getAttribute('data-stream')] = b; });
    streams.forEach(function (s) {
      if (have[s.name]) return;
      var label = s.name.slice(s.name.indexOf('/') + 1);
      self.tabs.appendChild(h('button', { type: 'button', cls: 'tab', 'data-stream': s.name, text: label,
        onclick: function () { self.open(s.name, true); } }));
    });
    if (!streams.length && !this.stream) {
      this.pre.textContent = terminal(this.status) ? '(no log lines)' : '(no log lines yet)';
      return;
    }
    if (!this.stream && streams.length) this.open(streams[0].name, true);
    else if (this.stream && !this.running && !terminal(this.status)) this.open(this.stream, false);
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
      this.offset = 0;
      this.pre.textContent = '';
      this.pre.setAttribute('data-stream', stream);
      this.pre.setAttribute('data-lines', '0');
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
      self.abort = ctl;
      api('/v1/training-jobs/' + enc(self.name) + '/logs?stream=' + enc(stream) + '&offset=' + self.offset +
          '&limit=2000' + (follow ? '&follow=1' : ''), { signal: ctl && ctl.signal }).then(function (r) {
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
    if (!events.length) return;
    var atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    var frag = document.createDocumentFragment();
    events.forEach(function (e) {
      var t = new Date(e.timestamp);
      frag.appendChild(h('span', { cls: 'line' + (e.stream === 'stderr' ? ' err' : '') },
        h('span', { cls: 'ts', text: t.toISOString().slice(11, 23) + ' ' }),
        e.rank ? h('span', { cls: 'rank', text: '[' + e.rank + '] ' }) : null,
        e.message + '\n'));
    });
    pre.appendChild(frag);
    while (pre.childNodes.length > LOG_LINES_MAX) pre.removeChild(pre.firstChild);
    pre.setAttribute('data-lines', String(+(pre.getAttribute('data-lines') || 0) + events.length));
    if (atBottom) pre.scrollTop = pre.scrollHeight;
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
    this.count = h('span', { cls: 'muted', id: 'hosts-count' });
    this.reload = serial(function () { return self.load(); });
    root.appendChild(h('section', { cls: 'card' },
      h('div', { cls: 'toolbar' }, h('h1', { text: 'Hosts' }), this.count),
      this.err,
      h('table', { id: 'hosts-table', cls: 'grid' },
        h('thead', null, h('tr', null, ['Host', 'State', 'Address', 'CPUs', 'GPUs', 'Last heartbeat', 'Current job'].map(function (t) {
          return h('th', { text: t });
        }))),
        this.tbody)));
    this.reload();
  }

  HostsView.prototype.load = function () {
    var self = this;
    return api('/v1/hosts').then(function (r) {
      clear(self.err);
      self.hosts = r.hosts;
      self.loadedAt = Date.now();
      self.render();
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
      this.tbody.appendChild(h('tr', null, h('td', { colspan: 7, cls: 'muted', text: 'No hosts in the inventory.' })));
      return;
    }
    var drift = Date.now() - (this.loadedAt || Date.now());
    hosts.forEach(function (x) {
      self.tbody.appendChild(h('tr', { 'data-host': x.name, 'data-state': x.state },
        h('td', { text: x.name }),
        h('td', null, h('span', { cls: 'badge', 'data-status': x.state, text: x.state })),
        h('td', { text: x.address || '\u2014' }),
        h('td', { text: x.cpus }),
        h('td', { text: x.gpus }),
        h('td', { cls: 'heartbeat', text: fmtAge(x.last_heartbeat_ms_ago == null ? null : x.last_heartbeat_ms_ago + drift) }),
        h('td', null, x.job ? [h('a', { href: '#/jobs/' + enc(x.job), text: x.job }), ' (' + x.algo + ')'] : '\u2014')));
    });
  };

  HostsView.prototype.changed = function (c) {
    if (c.hosts || c.jobs || c.periodic) this.reload();
  };

  HostsView.prototype.tick = function () {
    this.render();
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
