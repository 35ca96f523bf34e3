import { clear, h } from './dom.js';
import { api, enc } from './api.js';
import { badge, culpritFromReason, errorBox, fmtAge, fmtDuration, fmtTime, ms, terminal } from './format.js';
import { TM_KEEP, TM_POLL_MS, fmtBytes, fmtPercent, memText, sparkCell } from './telemetry.js';
import { serial } from './live.js';
import { scroller } from './jobs.js';
import { MetricsPanel, RequestPanel } from './panels.js';
import { LogsPanel } from './logs.js';
import { FindingsPanel } from './findings.js';
import { GoodputBar } from './goodput.js';

/* ------------------------------------------------------------ one job */

/*
 * The job page: JobView loads the job (DescribeTrainingJob and the page's
 * /v1/ui/jobs/NAME) and hands it to one component per part of the page.
 * Each component owns its DOM subtree (`el`) and redraws it in
 * update(job), where job is { desc: Describe's answer, rt: the page's };
 * the metrics and logs panels also load their own data.
 */

export function JobView(root, name) {
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
  this.findings = new FindingsPanel();
  this.goodput = new GoodputBar();
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
    card('Rules and findings', this.findings.el),
    card('Where the time went', this.goodput.el),
    card('Hosts', [this.hosts.el, this.telemetry.el]),
    card('Metrics', this.metrics.el),
    this.logs.el,
    card('Request', this.request.el)));
  this.reload();
  this.metrics.reload();
}

/* A card of the page: a section, with a heading when there is a title. */
export function card(title, body) {
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

  [this.head, this.failure, this.summary, this.timeline, this.restarts, this.goodput,
   this.findings, this.hosts, this.request, this.logs].forEach(function (part) { part.update(job); });
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
export function JobHeader() {
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
export function FailureBox() {
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
export function JobSummary() {
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
export function StatusTimeline() {
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
export function timelineBar(tr, t1) {
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

export function transitionsTable(tr, done, now) {
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
export function RestartList() {
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
export function JobHosts() {
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

export function jobHostRow(x, culprit, firstFailure, ended) {
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
export function rankText(x, failedRank, ended) {
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
export var STRAGGLER_POINTS = 25;

export function JobTelemetry(name) {
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

export function median(vs) {
  vs = vs.filter(function (v) { return v != null; }).sort(function (a, b) { return a - b; });
  if (!vs.length) return null;
  var m = vs.length >> 1;
  return vs.length % 2 ? vs[m] : (vs[m - 1] + vs[m]) / 2;
}
