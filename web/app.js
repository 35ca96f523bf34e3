/*
 * The trainctl status page: jobs, one job, tuning jobs, queues, hosts, members. ES modules with no
 * build step (web/js/); served by trainctld from memory (scripts/embed.sh). Data
 * comes from the REST face (/v1/training-jobs, /v1/hosts), the page's own
 * endpoints (/v1/ui/...), and the long-poll /v1/changes, which tells the
 * page what to reload (docs/web.md). Text from the server is always set
 * with textContent, never parsed as HTML.
 */
import { clear } from './js/dom.js';
import { live } from './js/live.js';
import { CloneView, JobsView } from './js/jobs.js';
import { JobView } from './js/job.js';
import { CompareView } from './js/panels.js';
import { TuningJobView, TuningJobsView } from './js/tuning.js';
import { HostsView } from './js/hosts.js';
import { QueuesView } from './js/queues.js';
import { MembersView } from './js/members.js';

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
  var other = r.parts[0] === 'hosts' || r.parts[0] === 'queues' || r.parts[0] === 'members';
  document.getElementById('nav-jobs').classList.toggle('active', !other && !tuning);
  document.getElementById('nav-tuning').classList.toggle('active', tuning);
  document.getElementById('nav-hosts').classList.toggle('active', r.parts[0] === 'hosts');
  document.getElementById('nav-queues').classList.toggle('active', r.parts[0] === 'queues');
  document.getElementById('nav-members').classList.toggle('active', r.parts[0] === 'members');
  if (r.parts[0] === 'members') {
    document.title = 'Members \u00b7 trainctl';
    live.view = new MembersView(root);
  } else if (r.parts[0] === 'queues') {
    document.title = 'Queues \u00b7 trainctl';
    live.view = new QueuesView(root);
  } else if (r.parts[0] === 'hosts') {
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
