import { ApiError, api, enc, sleep } from './api.js';

/* --------------------------------------------------------------- live */

/*
 * One long-poll at a time on /v1/changes; each answer says what changed
 * and the current view reloads that. A view that is not told anything
 * still refreshes every 15 s, in case an answer was lost.
 */
export var live = {
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
export function serial(fn) {
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
