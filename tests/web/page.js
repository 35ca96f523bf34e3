/*
 * The browser half of tests/web/test_page.py: drives Debian's chromium
 * through playwright-core against a running trainctld and prints one JSON
 * line per check ({"name", "ok", "diag"}), which the Python side turns
 * into TAP. Config comes as JSON in the file named by PAGE_CONFIG:
 *   {"url", "artifacts", "modules", "chromium", "jobs": {"list", "live",
 *    "bad", "rules", "stall"}: CreateTrainingJob bodies}
 */
'use strict';

const { cfg, chromium, report, check, shot } = require('./harness.js');

async function createJob(body) {
  const r = await fetch(cfg.url + '/v1/training-jobs', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body)
  });
  if (r.status !== 200) throw new Error('create ' + body.TrainingJobName + ': ' + r.status + ' ' + await r.text());
}

async function main() {
  /* playwright gives chromium a fresh, empty profile of its own. */
  const browser = await chromium.launch({
    executablePath: cfg.chromium,
    headless: true,
    timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });

  const list = cfg.jobs.list.TrainingJobName;
  const liveJob = cfg.jobs.live.TrainingJobName;
  const bad = cfg.jobs.bad.TrainingJobName;

  await check('the page loads and shows the jobs table', async () => {
    await page.goto(cfg.url + '/', { waitUntil: 'load' });
    await page.waitForSelector('#jobs-table');
    await page.waitForSelector('#live[data-state="live"]', { timeout: 15000 });
    return 'title ' + await page.title();
  });

  /* A marker a reload would wipe out. */
  await page.evaluate(() => { window.__marker = 'kept'; });
  const navBefore = navigations;

  await check('a new job appears in the list without a reload', async () => {
    await createJob(cfg.jobs.list);
    await page.waitForSelector(`tr[data-job="${list}"]`, { timeout: 15000 });
    const cells = await page.$$eval(`tr[data-job="${list}"] td`, (tds) => tds.map((t) => t.textContent));
    if (!/2 \u00d7 ml\.m5\.large/.test(cells[3])) throw new Error('instances cell: ' + cells[3]);
    return cells.join(' | ');
  });

  await check('its status changes live to Completed without a reload', async () => {
    const seen = [];
    const deadline = Date.now() + 60000;
    for (;;) {
      const st = await page.getAttribute(`tr[data-job="${list}"]`, 'data-status');
      const sec = await page.textContent(`tr[data-job="${list}"] td.secondary`);
      if (!seen.length || seen[seen.length - 1] !== st + '/' + sec) seen.push(st + '/' + sec);
      if (st === 'Completed') break;
      if (st === 'Failed' || Date.now() > deadline) throw new Error('statuses seen: ' + seen.join(', '));
      await page.waitForTimeout(100);
    }
    const marker = await page.evaluate(() => window.__marker);
    if (marker !== 'kept' || navigations !== navBefore)
      throw new Error('the page was reloaded (marker ' + marker + ', navigations ' + navigations + ')');
    if (!seen.some((s) => s.startsWith('InProgress')))
      throw new Error('never saw InProgress: ' + seen.join(', '));
    return 'seen: ' + seen.join(' -> ');
  });
  await shot(page, 'jobs-list.png');

  await check('the status filter narrows the list', async () => {
    await page.selectOption('#filter-status', 'Completed');
    await page.waitForFunction((n) => {
      const rows = document.querySelectorAll('tr[data-job]');
      return rows.length >= 1 && Array.prototype.every.call(rows, (r) => r.getAttribute('data-status') === 'Completed') &&
        !!document.querySelector(`tr[data-job="${n}"]`);
    }, list);
    await page.selectOption('#filter-status', 'Failed');
    await page.waitForFunction(() => !document.querySelector('tr[data-job]'));
    await page.selectOption('#filter-status', '');
    await page.fill('#filter-name', 'no-such-job-xyz');
    await page.waitForFunction(() => !document.querySelector('tr[data-job]'));
    await page.fill('#filter-name', '');
    await page.waitForSelector(`tr[data-job="${list}"]`);
  });

  await check('the job page shows request, timeline, hosts and logs', async () => {
    await page.click(`tr[data-job="${list}"] a`);
    await page.waitForSelector('#job-status[data-status="Completed"]');
    await page.waitForSelector('#transitions tr[data-status="Completed"]');
    const hp = await page.textContent('#hyperparameters');
    if (!/learning_rate/.test(hp)) throw new Error('hyperparameters: ' + hp);
    const res = await page.textContent('#resources');
    if (!/ml\.m5\.large/.test(res) || !/2/.test(res)) throw new Error('resources: ' + res);
    const statuses = await page.$$eval('#transitions tbody tr', (rs) => rs.map((r) => r.getAttribute('data-status')));
    if (statuses.indexOf('Training') < 0) throw new Error('transitions: ' + statuses.join(','));
    const rows = await page.$$eval('#hosts-of-job tbody tr', (rs) => rs.map((r) => r.getAttribute('data-algo')));
    if (rows.join(',') !== 'algo-1,algo-2') throw new Error('hosts rows: ' + rows.join(','));
    await page.waitForFunction(() => +(document.querySelector('#log').getAttribute('data-lines') || 0) >= 7);
    const log = await page.textContent('#log');
    if (!/epoch 6 loss=0\.1667; acc=/.test(log)) throw new Error('log: ' + log.slice(0, 500));
    return 'transitions ' + statuses.join(' -> ');
  });

  await check('the job page shows where the time went', async () => {
    await page.waitForSelector('#goodput .gp-bar .gp-seg');
    const cats = await page.$$eval('#goodput .gp-legend li', (ls) => ls.map((l) => l.getAttribute('data-cat')));
    if (cats.indexOf('Productive') < 0 || cats.indexOf('Queued') < 0) throw new Error('legend: ' + cats.join(','));
    const widths = await page.$$eval('#goodput .gp-seg', (ss) => ss.map((s) => parseFloat(s.style.width)));
    const sum = widths.reduce((a, b) => a + b, 0);
    if (Math.abs(sum - 100) > 0.5) throw new Error('the segments add up to ' + sum + '%');
    return await page.textContent('#goodput .gp-head');
  });

  await check('a metric plot of the finished job has points', async () => {
    await page.waitForSelector('.plot[data-metric="loss"] canvas');
    await page.waitForFunction(() => +(document.querySelector('.plot[data-metric="loss"]').getAttribute('data-points') || 0) >= 12);
    const n = await page.getAttribute('.plot[data-metric="loss"]', 'data-points');
    const acc = await page.getAttribute('.plot[data-metric="acc"]', 'data-points');
    const last = await page.getAttribute('.plot[data-metric="loss"]', 'data-last');
    if (Math.abs(+last - 1 / 6) > 1e-3) throw new Error('last loss ' + last);
    return 'loss points ' + n + ', acc points ' + acc;
  });
  await shot(page, 'job-completed.png');

  await check('a running job page updates its plot and status live', async () => {
    await createJob(cfg.jobs.live);
    await page.evaluate((n) => { location.hash = '#/jobs/' + n; }, liveJob);
    await page.waitForSelector('#job-name');
    const counts = [];
    const deadline = Date.now() + 60000;
    let shotRunning = false;
    let status;
    for (;;) {
      status = await page.getAttribute('#job-status', 'data-status');
      const el = await page.$('.plot[data-metric="loss"]');
      const n = el ? +(await el.getAttribute('data-points') || 0) : 0;
      if (!counts.length || counts[counts.length - 1].n !== n) counts.push({ n, status });
      if (status === 'InProgress' && n >= 6 && !shotRunning) {
        shotRunning = true;
        await shot(page, 'job-running.png');
      }
      if (status === 'Completed') break;
      if (status === 'Failed' || Date.now() > deadline) throw new Error('status ' + status + ', points ' + JSON.stringify(counts));
      await page.waitForTimeout(100);
    }
    await page.waitForFunction(() => +(document.querySelector('.plot[data-metric="loss"]').getAttribute('data-points') || 0) >= 16);
    const growing = counts.filter((c) => c.status === 'InProgress' && c.n > 0).length;
    if (growing < 2) throw new Error('the plot did not grow while training: ' + JSON.stringify(counts));
    const marker = await page.evaluate(() => window.__marker);
    if (marker !== 'kept') throw new Error('the page was reloaded');
    return 'points while InProgress: ' + counts.map((c) => c.n).join(' ');
  });
  await shot(page, 'job-live-completed.png');

  let culprit = '';
  await check('a failed job shows its failing host and reason', async () => {
    await createJob(cfg.jobs.bad);
    await page.evaluate((n) => { location.hash = '#/jobs/' + n; }, bad);
    await page.waitForSelector('#job-status[data-status="Failed"]', { timeout: 60000 });
    await page.waitForSelector('#failure #failing-host');
    const host = await page.textContent('#failing-host');
    const reason = await page.textContent('#failure-reason');
    if (!/algo-2/.test(host) || !/local-\d/.test(host)) throw new Error('failing host: ' + host);
    if (!/exited with code 3/.test(reason)) throw new Error('reason: ' + reason);
    const failedRow = await page.$('#hosts-of-job tr.failed[data-algo="algo-2"]');
    if (!failedRow) throw new Error('algo-2 is not marked in the hosts table');
    culprit = host;
    return host + ' | ' + reason;
  });
  await shot(page, 'job-failed.png');

  await check('the rules and findings card shows rule statuses and the health checks', async () => {
    const name = cfg.jobs.rules.TrainingJobName;
    await createJob(cfg.jobs.rules);
    await page.evaluate((n) => { location.hash = '#/jobs/' + n; }, name);
    await page.waitForSelector('#job-status[data-status="Completed"]', { timeout: 60000 });
    await page.waitForSelector('#rules-table tr[data-rule="StalledTrainingRule"][data-status="NoIssuesFound"]');
    await page.waitForSelector('#rules-table tr[data-rule="OverallSystemUsage"][data-status="NoIssuesFound"]');
    const kinds = await page.$$eval('#rules-table tbody tr td:nth-child(2)', (tds) => tds.map((t) => t.textContent));
    if (kinds.join(',') !== 'Debugger,Profiler') throw new Error('rule kinds: ' + kinds.join(','));
    const passed = await page.textContent('#findings-list li[data-kind="check-passed"]');
    if (!/Infrastructure checks passed on 2 hosts in [\d.]+ s\. Network: round trip [\d.]+ ms, \d+ Mbit\/s/.test(passed))
      throw new Error('health checks: ' + passed);
    return passed;
  });
  await shot(page, 'job-rules.png');

  await check('a stalled job shows its rule\'s issue and the hang, with its host', async () => {
    const name = cfg.jobs.stall.TrainingJobName;
    await createJob(cfg.jobs.stall);
    await page.evaluate((n) => { location.hash = '#/jobs/' + n; }, name);
    await page.waitForSelector('#job-status[data-status="Stopped"]', { timeout: 60000 });
    await page.waitForSelector('#rules-table tr.failed[data-rule="StalledTrainingRule"][data-status="IssuesFound"]');
    const details = await page.textContent('#rules-table tr[data-rule="StalledTrainingRule"] td.details');
    if (!/made no progress/.test(details)) throw new Error('details: ' + details);
    const host = await page.getAttribute('#findings-list li[data-kind="hang"]', 'data-host');
    const hang = await page.textContent('#findings-list li[data-kind="hang"]');
    if (!/^local-\d$/.test(host || '') || !/algo-\d \(host local-\d\) rank \d+ made no progress for \d+ s/.test(hang))
      throw new Error('hang: ' + host + ' ' + hang);
    return hang;
  });
  await shot(page, 'job-stalled.png');

  await check('straggler and failed-check messages are read as findings', async () => {
    const got = await page.evaluate(async () => {
      const m = await import('/ui/js/findings.js');
      return [
        m.findingsIn('Straggler: algo-2 (host local-2) rank 0 is 3.1x slower than the job\'s other hosts: ' +
          'busy 0.30 of a core (0.00 of it waiting for a CPU) against 0.95 (0.00), the others\' median, over 8 s. ' +
          'Draining host local-2 to move the job to a spare from its checkpoint'),
        m.findingsIn('Infrastructure check failed on algo-2 (host node2): network: its best bandwidth to its ' +
          'peers is 3 Mbit/s, 1/918 of the job\'s median of 2753 Mbit/s; replaced by node4')];
    });
    const s = got[0][0], c = got[1][0];
    if (!s || s.kind !== 'straggler' || !/over 8 s$/.test(s.text)) throw new Error('straggler: ' + JSON.stringify(got[0]));
    if (!c || c.kind !== 'check-failed' || !/replaced by node4$/.test(c.text)) throw new Error('check: ' + JSON.stringify(got[1]));
    return s.text + ' | ' + c.text;
  });

  await check('the failed job is listed as Failed with its reason reachable', async () => {
    await page.evaluate(() => { location.hash = '#/jobs?status=Failed'; });
    await page.waitForSelector(`tr[data-job="${bad}"][data-status="Failed"]`);
    return culprit;
  });

  await check('the hosts page lists the inventory with state and heartbeat', async () => {
    await page.click('#nav-hosts');
    await page.waitForSelector('#hosts-table tr[data-host]');
    await page.waitForFunction(() => document.querySelectorAll('#hosts-table tr[data-host]').length === 2);
    const rows = await page.$$eval('#hosts-table tr[data-host]', (rs) => rs.map((r) =>
      r.getAttribute('data-host') + ':' + r.getAttribute('data-state') + ':' + r.querySelector('.heartbeat').textContent));
    if (!rows.every((r) => /:(ready|busy):/.test(r) && /ago$/.test(r))) throw new Error(rows.join(', '));
    return rows.join(', ');
  });
  await shot(page, 'hosts.png');

  await check('no script errors in the page', async () => {
    const real = consoleErrors.filter((e) => !/favicon/.test(e));
    if (real.length) throw new Error(real.join('\n'));
  });

  await browser.close();
}

main().then(() => process.exit(0), (e) => {
  report('browser session', false, String(e && e.stack || e));
  process.exit(1);
});
