/*
 * The browser half of tests/web/test_tuning_page.py: drives Debian's
 * chromium through playwright-core against a running trainctld and prints
 * one JSON line per check ({"name", "ok", "diag"}), which the Python side
 * turns into TAP. Config comes as JSON in the file named by PAGE_CONFIG:
 *   {"url", "artifacts", "modules", "chromium",
 *    "tuning": a CreateHyperParameterTuningJob body}
 */
'use strict';

const { cfg, chromium, report, check, shot } = require('./harness.js');

/* One SageMaker call (JSON 1.1), as the CLI and boto3 send it. */
async function sagemaker(op, body) {
  const r = await fetch(cfg.url + '/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': 'SageMaker.' + op },
    body: JSON.stringify(body)
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(op + ': ' + r.status + ' ' + text);
  return JSON.parse(text);
}

async function attr(page, sel, name) {
  const el = await page.$(sel);
  return el ? el.getAttribute(name) : null;
}

async function main() {
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

  const name = cfg.tuning.HyperParameterTuningJobName;

  await check('the tuning jobs page loads from the nav', async () => {
    await page.goto(cfg.url + '/', { waitUntil: 'load' });
    await page.waitForSelector('#live[data-state="live"]', { timeout: 15000 });
    await page.click('#nav-tuning');
    await page.waitForSelector('#tuning-table');
    const active = await page.getAttribute('#nav-tuning', 'class');
    if (!/active/.test(active || '')) throw new Error('nav class ' + active);
    return 'title ' + await page.title();
  });

  await page.evaluate(() => { window.__marker = 'kept'; });

  await check('a new tuning job appears in the list without a reload', async () => {
    await sagemaker('CreateHyperParameterTuningJob', cfg.tuning);
    await page.waitForSelector(`tr[data-tuning="${name}"]`, { timeout: 15000 });
    const cells = await page.$$eval(`tr[data-tuning="${name}"] td`, (tds) => tds.map((t) => t.textContent));
    if (cells[2] !== 'Random') throw new Error('strategy cell: ' + cells.join(' | '));
    if (await page.evaluate(() => window.__marker) !== 'kept') throw new Error('the page was reloaded');
    return cells.join(' | ');
  });
  await shot(page, 'tuning-list.png');

  await check('the tuning job view follows it live to Completed', async () => {
    await page.click(`tr[data-tuning="${name}"] a`);
    await page.waitForSelector('#tuning-name');
    const seen = [];
    const curves = [];
    let shotRunning = false;
    const deadline = Date.now() + 120000;
    for (;;) {
      const st = await attr(page, '#tuning-status', 'data-status');
      const rows = await page.$$eval('#tuning-jobs-table tbody tr', (rs) => rs.length).catch(() => 0);
      const n = +(await attr(page, '#curves-plot', 'data-points') || 0);
      const key = st + ' ' + rows + ' jobs';
      if (!seen.length || seen[seen.length - 1] !== key) seen.push(key);
      if (st === 'InProgress') curves.push(n);
      if (st === 'InProgress' && n >= 6 && !shotRunning) {
        shotRunning = true;
        await shot(page, 'tuning-running.png');
      }
      if (st === 'Completed') break;
      if (st === 'Failed' || st === 'Stopped' || Date.now() > deadline)
        throw new Error('statuses seen: ' + seen.join(', '));
      await page.waitForTimeout(200);
    }
    if (!seen.some((s) => s.startsWith('InProgress'))) throw new Error('never saw InProgress: ' + seen.join(', '));
    const grew = curves.filter((n, i) => i && n > curves[i - 1]).length;
    if (grew < 2) throw new Error('the learning curves did not grow while it ran: ' + curves.join(' '));
    if (await page.evaluate(() => window.__marker) !== 'kept') throw new Error('the page was reloaded');
    return 'seen: ' + seen.join(' -> ');
  });

  const d = await sagemaker('DescribeHyperParameterTuningJob', { HyperParameterTuningJobName: name });
  const kids = await sagemaker('ListTrainingJobsForHyperParameterTuningJob',
    { HyperParameterTuningJobName: name, MaxResults: 100 });

  await check('the view lists its 3 training jobs with values and objectives', async () => {
    await page.waitForFunction(() =>
      document.querySelectorAll('#tuning-jobs-table tbody tr[data-objective-status="Succeeded"]').length === 3);
    const rows = await page.$$eval('#tuning-jobs-table tbody tr', (rs) => rs.map((r) => ({
      job: r.getAttribute('data-job'),
      status: r.getAttribute('data-status'),
      objective: r.querySelector('td.objective').textContent,
      x: r.querySelector('td[data-param="x"]').textContent,
      act: r.querySelector('td[data-param="act"]').textContent
    })));
    const want = kids.TrainingJobSummaries.map((s) => s.TrainingJobName).sort();
    const got = rows.map((r) => r.job).sort();
    if (JSON.stringify(want) !== JSON.stringify(got)) throw new Error('rows ' + got + ' want ' + want);
    for (const r of rows) {
      const s = kids.TrainingJobSummaries.filter((k) => k.TrainingJobName === r.job)[0];
      if (r.status !== 'Completed') throw new Error(r.job + ' status ' + r.status);
      if (r.x !== s.TunedHyperParameters.x || r.act !== s.TunedHyperParameters.act)
        throw new Error(r.job + ' values ' + r.x + ', ' + r.act);
      const v = s.FinalHyperParameterTuningJobObjectiveMetric.Value;
      if (Math.abs(+r.objective - v) > 1e-4 * Math.max(1, Math.abs(v)))
        throw new Error(r.job + ' objective ' + r.objective + ' want ' + v);
    }
    const summary = await page.textContent('#tuning-summary');
    if (!/3 Completed/.test(summary) || !/Random/.test(summary) || !/Minimize loss/.test(summary))
      throw new Error('summary: ' + summary);
    return rows.map((r) => r.job + '=' + r.objective).join(', ');
  });

  await check('the best training job is shown, marked and linked', async () => {
    const best = d.BestTrainingJob.TrainingJobName;
    const link = await page.textContent('#best-job-link');
    if (link !== best) throw new Error('best job ' + link + ', want ' + best);
    const marked = await page.$$eval('#tuning-jobs-table tr.best', (rs) => rs.map((r) => r.getAttribute('data-job')));
    if (marked.join() !== best) throw new Error('marked rows: ' + marked.join());
    const objective = +await page.textContent('#best-objective');
    const all = kids.TrainingJobSummaries.map((s) => s.FinalHyperParameterTuningJobObjectiveMetric.Value);
    if (Math.abs(objective - Math.min.apply(null, all)) > 1e-4) throw new Error('best objective ' + objective + ' of ' + all);
    const hp = await page.textContent('#best-job #hyperparameters');
    if (hp.indexOf(d.BestTrainingJob.TunedHyperParameters.act) < 0) throw new Error('best values: ' + hp);
    return best + ' ' + objective;
  });

  await check('the objective plot has every job and the best-so-far line', async () => {
    await page.waitForSelector('#objective-plot canvas');
    const n = +await attr(page, '#objective-plot', 'data-points');
    const best = +await attr(page, '#objective-plot', 'data-best');
    const legend = await page.textContent('#objective-plot');
    if (n !== 3) throw new Error('points ' + n);
    if (Math.abs(best - d.BestTrainingJob.FinalHyperParameterTuningJobObjectiveMetric.Value) > 1e-6)
      throw new Error('best so far ' + best);
    if (!/best so far/.test(legend)) throw new Error('legend: ' + legend);
    const curves = await attr(page, '#curves-plot', 'data-series');
    if (+curves !== 3) throw new Error('learning curves: ' + curves);
    return 'points ' + n + ', best ' + best + ', curves ' + curves;
  });

  await check('one scatter per tuned hyperparameter, categorical on a category axis', async () => {
    const plots = await page.$$eval('#param-plots .plot', (ps) => ps.map((p) => ({
      param: p.getAttribute('data-param'), kind: p.getAttribute('data-kind'),
      scale: p.getAttribute('data-scale'), points: +p.getAttribute('data-points'),
      canvas: !!p.querySelector('canvas'), text: p.textContent
    })));
    const by = {};
    plots.forEach((p) => { by[p.param] = p; });
    if (plots.length !== 3 || !by.x || !by.layers || !by.act) throw new Error(JSON.stringify(plots));
    if (plots.some((p) => p.points !== 3 || !p.canvas)) throw new Error(JSON.stringify(plots));
    if (by.x.scale !== 'log' || by.act.kind !== 'categorical' || by.layers.kind !== 'integer')
      throw new Error(JSON.stringify(plots));
    return plots.map((p) => p.param + ':' + p.kind + ':' + p.scale).join(', ');
  });
  await shot(page, 'tuning-completed.png');

  await check('the best job links to its job view', async () => {
    const best = d.BestTrainingJob.TrainingJobName;
    await page.click('#best-job-link');
    await page.waitForSelector(`#job-name`);
    await page.waitForFunction((b) => document.querySelector('#job-name').textContent === b, best);
    await page.waitForSelector('.plot[data-metric="loss"] canvas');
    return best;
  });
  await shot(page, 'tuning-best-job.png');

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
