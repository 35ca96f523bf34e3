/*
 * The browser half of tests/web/test_queues_page.py: the queues view
 * against a running trainctld. Config (PAGE_CONFIG): {"url", "artifacts",
 * "modules", "chromium", "big", "wait": serviceRequestPayload strings}.
 * The AWS Batch objects are made with plain POSTs of the rest-json API
 * (the controller runs without credentials).
 */
'use strict';

const { cfg, chromium, report, check, shot } = require('./harness.js');

const TYPE = 'ml.m5.large';

async function batch(op, body) {
  const r = await fetch(cfg.url + '/v1/' + op, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body)
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(op + ': ' + r.status + ' ' + text);
  return JSON.parse(text);
}

async function setup() {
  await batch('createserviceenvironment', {
    serviceEnvironmentName: 'web-pool', serviceEnvironmentType: 'SAGEMAKER_TRAINING',
    capacityLimits: [{ maxCapacity: 2, capacityUnit: TYPE }]
  });
  const pol = await batch('createschedulingpolicy', {
    name: 'web-pol', quotaSharePolicy: { idleResourceAssignmentStrategy: 'FIFO' }
  });
  await batch('createjobqueue', {
    jobQueueName: 'teams', priority: 3, jobQueueType: 'SAGEMAKER_TRAINING',
    schedulingPolicyArn: pol.arn, serviceEnvironmentOrder: [{ order: 1, serviceEnvironment: 'web-pool' }]
  });
  for (const share of ['vision', 'nlp'])
    await batch('createquotashare', {
      quotaShareName: share, jobQueue: 'teams', capacityLimits: [{ maxCapacity: 1, capacityUnit: TYPE }],
      resourceSharingConfiguration: { strategy: 'LEND_AND_BORROW', borrowLimit: -1 },
      preemptionConfiguration: { inSharePreemption: 'DISABLED' }
    });
}

function submit(name, share, payload) {
  return batch('submitservicejob', {
    jobName: name, jobQueue: 'teams', serviceJobType: 'SAGEMAKER_TRAINING', quotaShareName: share,
    serviceRequestPayload: payload
  });
}

async function main() {
  const browser = await chromium.launch({
    executablePath: cfg.chromium,
    headless: true,
    timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });

  const q = 'section[data-queue="teams"]';

  await check('a queue with two quota shares; one borrows, one waits', async () => {
    await setup();
    await submit('web-q-big', 'vision', cfg.big);
    /* The wait job after the big one holds both hosts. */
    const deadline = Date.now() + 20000;
    for (;;) {
      const r = await (await fetch(cfg.url + '/v1/queues/teams')).json();
      const sh = (r.queues || [{ shares: [] }])[0].shares.find((s) => s.name === 'vision');
      if (sh && sh.in_use === 2) break;
      if (Date.now() > deadline) throw new Error('vision never ran: ' + JSON.stringify(r));
      await new Promise((res) => setTimeout(res, 200));
    }
    await submit('web-q-wait', 'nlp', cfg.wait);
  });

  await check('the queues view shows guarantee, in use, borrowed and lent per share', async () => {
    await page.goto(cfg.url + '/#/queues', { waitUntil: 'load' });
    await page.waitForSelector('#live[data-state="live"]', { timeout: 15000 });
    await page.waitForSelector(`${q} tr[data-share="vision"][data-in-use="2"][data-borrowed="1"]`);
    await page.waitForSelector(`${q} tr[data-share="nlp"][data-lent="1"]`);
    const nav = await page.getAttribute('#nav-queues', 'class');
    if (!/active/.test(nav || '')) throw new Error('the Queues link is not active: ' + nav);
    const cells = await page.$$eval(`${q} tr[data-share="vision"] td`, (tds) => tds.map((t) => t.textContent));
    if (cells[2] !== '1' || cells[3] !== '2' || cells[4] !== '1' || cells[5] !== '0')
      throw new Error('vision row: ' + cells.join(' | '));
    return cells.join(' | ');
  });

  await check('the waiting job has its place and reason', async () => {
    await page.waitForSelector(`${q} tr[data-job="web-q-wait"][data-state="waiting"][data-position="1"]`);
    const why = await page.textContent(`${q} tr[data-job="web-q-wait"] td.reason`);
    if (!/^1st in queue teams; share nlp at 0 of 1/.test(why)) throw new Error('reason: ' + why);
    const state = await page.getAttribute(`${q} tr[data-job="web-q-big"]`, 'data-state');
    if (state !== 'running') throw new Error('the big job is ' + state);
    return why;
  });

  await check('each share has a chart that grows without a reload', async () => {
    const sel = `${q} .queue-plot[data-share="teams/vision"]`;
    await page.waitForSelector(`${sel} canvas`);
    await page.waitForSelector(`${q} .queue-plot[data-share="teams/nlp"] canvas`);
    const before = Number(await page.getAttribute(sel, 'data-points'));
    await shot(page, 'queues-1.png');
    const nav0 = navigations;
    await page.waitForFunction((s) => {
      const el = document.querySelector(s);
      return el && Number(el.getAttribute('data-points')) > 2;
    }, sel, { timeout: 30000 });
    const after = Number(await page.getAttribute(sel, 'data-points'));
    if (navigations !== nav0) throw new Error('the page was reloaded');
    const legend = await page.$$eval(`${sel} .u-legend .u-label`, (ls) => ls.map((l) => l.textContent));
    for (const want of ['guarantee', 'in use', 'borrowed', 'lent'])
      if (!legend.includes(want)) throw new Error('legend: ' + legend.join(', '));
    return before + ' -> ' + after + ' points';
  });

  await check('no errors in the console', async () => {
    if (consoleErrors.length) throw new Error(consoleErrors.join('\n'));
  });

  await browser.close();
}

main().catch((e) => {
  report('the browser checks run', false, String(e && e.stack || e));
  process.exit(1);
});
