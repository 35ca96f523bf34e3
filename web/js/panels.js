/* The job page's request, metrics and compare panels. */
import { append, clear, h } from './dom.js';
import { api, enc } from './api.js';
import { errorBox, fmtTime } from './format.js';
import { serial } from './live.js';
import { scroller } from './jobs.js';
import { card } from './job.js';
import { PLOT_COLORS, fmtValue } from './tuning.js';

/* What was asked for: hyperparameters, channels, resources, and the
 * whole DescribeTrainingJob answer folded away. */
export function RequestPanel() {
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

export function none() {
  return h('p', { cls: 'muted', text: 'None.' });
}

export function hyperparametersTable(hp) {
  var keys = Object.keys(hp).sort();
  if (!keys.length) return none();
  return h('table', { cls: 'grid compact', id: 'hyperparameters' },
    h('tbody', null, keys.map(function (k) { return h('tr', null, h('th', { text: k }), h('td', { text: hp[k] })); })));
}

export function channelsTable(ch) {
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

export function resourcesList(d) {
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
export function MetricsPanel(name) {
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
export function pointHosts(s) {
  var seen = {}, keys = [];
  s.points.forEach(function (p) {
    var k = p.length > 2 && p[2] != null ? String(p[2]) : '?';
    if (!seen[k]) { seen[k] = 1; keys.push(k); }
  });
  if (keys.length < 2) return [];
  return keys.sort(function (a, b) { return a === '?' ? 1 : b === '?' ? -1 : a - b; });
}

export function hostLabel(names, k) {
  return k === '?' ? 'unknown host' : names[+k] || 'host ' + (+k + 1);
}

/* The points of series s as uPlot data: x in seconds or report numbers
 * (each host's own when there are several), one y column per host. */
export function plotData(s, mode, hosts) {
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

export function finalMetricsTable(series) {
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
export function legendValue(fmt) {
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
export function plotOpts(title, mode, width, series) {
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
export function timeRange(u, min, max) {
  if (min == null || max == null) {
    var now = Date.now() / 1000;
    return [now - 60, now];
  }
  var pad = max - min < 0.001 ? 1 : (max - min) * 0.03;
  return [min - pad, max + pad];
}

export function stepRange(u, min, max) {
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
export function CompareView(root, names, metric) {
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
export function hyperparameterDiff(jobs) {
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
