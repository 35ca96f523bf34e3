import { append, clear, h } from './dom.js';
import { api, enc } from './api.js';
import { badge, errorBox, fmtDuration, fmtTime, ms, terminal } from './format.js';
import { live, serial } from './live.js';
import { card } from './job.js';
import { hyperparametersTable, timeRange } from './panels.js';

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

export var TUNING_RELOAD_MS = 2000;
export var TUNING_CURVES_MAX = 24;
export var PLOT_COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2',
                   '#ca8a04', '#db2777', '#4f46e5', '#059669'];

export function counters(c) {
  c = c || {};
  return ['Completed', 'InProgress', 'Stopped', 'RetryableError', 'NonRetryableError']
    .map(function (k) { return (c[k] || 0) + ' ' + k; }).join(', ');
}

export function objectiveOf(s) {
  var m = s && s.FinalHyperParameterTuningJobObjectiveMetric;
  return m && typeof m.Value === 'number' ? m.Value : null;
}

export function fmtValue(v) {
  if (v == null) return '\u2014';
  return Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(+v.toPrecision(6));
}

export function TuningJobsView(root) {
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

export function tuningDuration(t) {
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

export function TuningJobView(root, name) {
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
export function padded(min, max, frac) {
  if (min == null || max == null) return [0, 1];
  var span = max - min || Math.abs(max) || 1;
  return [min - span * frac, max + span * frac];
}

export function paddedTime(u, min, max) {
  if (min == null || max == null) return timeRange(u, min, max);
  return max - min < 1 ? [min - 30, max + 30] : padded(min, max, 0.04);
}

export function paddedY(u, min, max) {
  return padded(min, max, 0.08);
}

/* Width of a plot in el, n to a row. */
export function plotWidth(el, n) {
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
