/*
 * The browser half of tests/web/test_members_page.py: the Members view of
 * three members, opened through a follower. Config (PAGE_CONFIG): {"url",
 * "artifacts", "modules", "chromium", "leader", "victim": member ids,
 * "kill": a file whose creation asks the Python half to kill -9 victim}.
 */
'use strict';

const fs = require('fs');
const { cfg, chromium, report, check, shot } = require('./harness.js');

async function main() {
  const browser = await chromium.launch({
    executablePath: cfg.chromium,
    headless: true,
    timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync']
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  let navigations = 0;
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) navigations++; });

  await check('the Members view lists three members and who leads', async () => {
    await page.goto(cfg.url + '/#/members', { waitUntil: 'load' });
    await page.waitForSelector(`#members-table tr[data-member="${cfg.leader}"][data-role="leader"]`);
    await page.waitForFunction(() =>
      document.querySelectorAll('#members-table tr[data-member][data-reachable="yes"]').length === 3);
    const roles = await page.$$eval('#members-table tr[data-member]',
      (trs) => trs.map((t) => t.getAttribute('data-member') + ':' + t.getAttribute('data-role')));
    if (roles.length !== 3 || roles.filter((r) => /:voter$/.test(r)).length !== 2)
      throw new Error('roles: ' + roles.join(', '));
    const nav = await page.getAttribute('#nav-members', 'class');
    if (!/active/.test(nav || '')) throw new Error('the Members link is not active: ' + nav);
    const count = await page.textContent('#members-count');
    if (!count.includes('member ' + cfg.leader + ' leads')) throw new Error('count: ' + count);
    const lags = await page.$$eval('#members-table tr[data-member]', (trs) => trs.map((t) => t.getAttribute('data-lag')));
    if (lags.some((l) => !/^\d+$/.test(l))) throw new Error('lags: ' + lags.join(', '));
    await shot(page, 'members-1.png');
    return roles.join(', ') + '; ' + count;
  });

  await check('a follower killed shows as not heard from, without a reload', async () => {
    const nav0 = navigations;
    fs.writeFileSync(cfg.kill, 'now');
    await page.waitForSelector(`#members-table tr[data-member="${cfg.victim}"][data-reachable="no"]`,
      { timeout: 15000 });
    if (navigations !== nav0) throw new Error('the page was reloaded');
    await shot(page, 'members-2.png');
    return await page.textContent(`#members-table tr[data-member="${cfg.victim}"]`);
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
