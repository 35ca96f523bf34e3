import { clear, h } from './dom.js';
import { api } from './api.js';
import { errorBox } from './format.js';
import { serial } from './live.js';
import { scroller } from './jobs.js';

/* ------------------------------------------------------------ members */

/*
 * The members of a replicated controller (GET /v1/members, docs/ha.md):
 * who leads and in which term, and per member its role, whether the
 * leader hears from it and how many log entries it lags behind. Looked
 * at again every MEMBERS_POLL_S (a member's lag is not in the change
 * feed). A controller that is not replicated answers 404: a note says so.
 */
var MEMBERS_POLL_S = 2;
var COLUMNS = ['Member', 'Role', 'Heard from', 'Lag (entries)', 'Raft address', 'API'];

export function MembersView(root) {
  var self = this;
  this.tbody = h('tbody');
  this.err = h('div');
  this.count = h('span', { cls: 'muted', id: 'members-count' });
  this.ticks = 0;
  this.reload = serial(function () { return self.load(); });
  root.appendChild(h('section', { cls: 'card' },
    h('div', { cls: 'toolbar' }, h('h1', { text: 'Members' }), this.count),
    this.err,
    scroller(h('table', { id: 'members-table', cls: 'grid' },
      h('thead', null, h('tr', null, COLUMNS.map(function (t) { return h('th', { text: t }); }))),
      this.tbody))));
  this.reload();
}

MembersView.prototype.load = function () {
  var self = this;
  return api('/v1/members').then(function (r) {
    clear(self.err);
    self.render(r);
  }, function (e) {
    clear(self.tbody);
    self.count.textContent = '';
    clear(self.err).appendChild(e && e.status === 404 ?
      h('p', { cls: 'note', id: 'members-none', text: 'This controller is not replicated: it has no members (docs/ha.md).' }) :
      errorBox(e));
  });
};

MembersView.prototype.render = function (r) {
  var self = this;
  var members = r.Members || [];
  this.count.textContent = members.length + ' members \u00b7 member ' + r.LeaderId + ' leads in term ' +
    r.Term + ' \u00b7 last entry ' + r.LastIndex;
  clear(this.tbody);
  members.forEach(function (m) {
    self.tbody.appendChild(h('tr', { 'data-member': String(m.Id), 'data-role': m.Role,
                                     'data-reachable': m.Reachable ? 'yes' : 'no', 'data-lag': String(m.Lag) },
      h('td', { text: String(m.Id) }),
      h('td', null, h('span', { cls: 'badge', 'data-status': m.Role, text: m.Role })),
      h('td', { text: m.Reachable ? 'yes' : 'no' }),
      h('td', { text: String(m.Lag) }),
      h('td', { text: m.RaftAddress }),
      h('td', null, m.ApiUrl ? h('a', { href: m.ApiUrl, text: m.ApiUrl }) : h('span', { cls: 'muted', text: '\u2014' }))));
  });
};

MembersView.prototype.changed = function (c) {
  if (c.periodic) this.reload();
};

MembersView.prototype.tick = function () {
  this.ticks++;
  if (this.ticks % MEMBERS_POLL_S === 0) this.reload();
};
