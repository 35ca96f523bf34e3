/*
 * What the browser halves of the page tests share (tests/web/page.js,
 * page_ops.js, tuning_page.js): the config from the JSON file named by
 * PAGE_CONFIG ({"url", "artifacts", "modules", "chromium", ...}),
 * playwright-core's chromium, and the checks as JSON lines
 * ({"name", "ok", "diag"}) that webtest.run_browser() turns into TAP.
 */
'use strict';

const fs = require('fs');
const path = require('path');

const cfg = JSON.parse(fs.readFileSync(process.env.PAGE_CONFIG, 'utf8'));
const { chromium } = require(path.join(cfg.modules, 'playwright-core'));

function report(name, ok, diag) {
  process.stdout.write(JSON.stringify({ name, ok: !!ok, diag: diag || '' }) + '\n');
}

/* Runs one check: what fn returns is its diag; what it throws fails it. */
async function check(name, fn) {
  try {
    report(name, true, await fn());
    return true;
  } catch (e) {
    report(name, false, String(e && e.stack || e).slice(0, 2000));
    return false;
  }
}

/* A full-page screenshot into the artifacts folder. */
function shot(page, name) {
  return page.screenshot({ path: path.join(cfg.artifacts, name), fullPage: true });
}

module.exports = { cfg, chromium, report, check, shot };
