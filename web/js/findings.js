/*
 * The job page's "Rules and findings" card: the Debugger and Profiler
 * rules' statuses (Describe's DebugRuleEvaluationStatuses and
 * ProfilerRuleEvaluationStatuses) and what the controller found about the
 * job's hosts and ranks: hangs, stragglers and the infrastructure checks
 * (which Describe carries in the transitions' messages and in
 * FailureReason; docs/web.md).
 */
import { clear, h } from './dom.js';
import { badge, culpritFromReason, fmtTime, ms } from './format.js';

/*
 * Findings in a text, in the order they appear, as { kind, text }:
 * check-failed, check-passed (with the network's figures when there are
 * any), straggler and hang. Exported for the page tests.
 */
export function findingsIn(text) {
  var out = [];
  var s = text || '';
  var m;

  m = /Infrastructure check failed on [^;]*(?:; replaced by \S+)?/.exec(s);
  if (m) out.push({ kind: 'check-failed', text: m[0] });
  m = /Infrastructure checks passed on \d+ hosts? in [\d.]+ s\.(?: Network: [^.]*\.\d+ ms, \d+ Mbit\/s \(the hosts' median\)\.)?/.exec(s);
  if (m) out.push({ kind: 'check-passed', text: m[0] });
  m = /Straggler: .*?(?=\. Draining|\. No spare|$)/.exec(s);
  if (m) out.push({ kind: 'straggler', text: m[0] });
  m = /algo-\d+ \(host [^)]+\) rank \d+ made no progress for \d+ s[^;]*/.exec(s);
  if (m) out.push({ kind: 'hang', text: m[0] });
  return out;
}

/* Every distinct finding of a job: its transitions, FailureReason, then
 * its Debugger rules' details (StalledTrainingRule names a hang). */
export function jobFindings(d) {
  var seen = {};
  var out = [];
  var texts = (d.SecondaryStatusTransitions || []).map(function (t) { return t.StatusMessage; });

  texts.push(d.FailureReason);
  (d.DebugRuleEvaluationStatuses || []).forEach(function (r) { texts.push(r.StatusDetails); });
  texts.forEach(function (t) {
    findingsIn(t).forEach(function (f) {
      if (seen[f.kind + '\n' + f.text]) return;
      seen[f.kind + '\n' + f.text] = 1;
      out.push(f);
    });
  });
  return out;
}

var KIND_TITLE = {
  'check-failed': 'Health check failed',
  'check-passed': 'Health checks passed',
  straggler: 'Straggler',
  hang: 'Hang'
};

export function FindingsPanel() {
  this.el = h('div', { id: 'findings' });
}

FindingsPanel.prototype.update = function (job) {
  var d = job.desc;
  var rules = [];
  var el = clear(this.el);

  (d.DebugRuleEvaluationStatuses || []).forEach(function (r) { rules.push({ r: r, kind: 'Debugger' }); });
  (d.ProfilerRuleEvaluationStatuses || []).forEach(function (r) { rules.push({ r: r, kind: 'Profiler' }); });
  var found = jobFindings(d);
  if (!rules.length && !found.length) {
    el.appendChild(h('p', { cls: 'muted', id: 'findings-none', text: 'No rules, health checks or findings.' }));
    return;
  }
  if (rules.length) el.appendChild(rulesTable(rules));
  if (found.length) el.appendChild(findingsList(found));
};

function rulesTable(rules) {
  return h('table', { cls: 'grid compact', id: 'rules-table' },
    h('thead', null, h('tr', null, ['Rule', 'Kind', 'Status', 'Details', 'Updated'].map(function (x) {
      return h('th', { text: x });
    }))),
    h('tbody', null, rules.map(function (x) {
      var r = x.r, st = r.RuleEvaluationStatus;
      return h('tr', { 'data-rule': r.RuleConfigurationName, 'data-status': st,
                       cls: st === 'IssuesFound' ? 'failed' : null },
        h('td', { text: r.RuleConfigurationName }),
        h('td', { text: x.kind }),
        h('td', null, badge(st)),
        h('td', { cls: 'details', text: r.StatusDetails || '' }),
        h('td', { text: fmtTime(ms(r.LastModifiedTime)) }));
    })));
}

function findingsList(found) {
  return h('ul', { id: 'findings-list', cls: 'findings' }, found.map(function (f) {
    var c = culpritFromReason(f.text);
    return h('li', { 'data-kind': f.kind, 'data-host': c && f.kind !== 'check-passed' ? c.host : null },
      h('b', { text: KIND_TITLE[f.kind] + ': ' }), f.text);
  }));
}
