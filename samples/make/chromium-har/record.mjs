// Drives Debian's Chromium with playwright-core: opens a page served by the nginx in front of an
// MCP server, runs the page's client (window.runScenario(OPTIONS)), and lets Playwright's
// recordHar write the HAR of everything the page sent. The client's own record (not the HAR) is
// saved as its truth.
//
// usage: node record.mjs URL HAR_OUT CLIENT_TRUTH_OUT OPTIONS_JSON [URL_REGEX]
// URL_REGEX, when given, is recordHar's urlFilter: only the requests it matches are recorded (as
// a user filtering DevTools' network panel before exporting would).
import fs from 'node:fs';
import { chromium } from 'playwright-core';

const [url, harOut, truthOut, options, urlRegex] = process.argv.slice(2);
// The flags the machine notes require: no sandbox as root, and no background networking, whose
// connections this closed network refuses.
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const version = browser.version();
const context = await browser.newContext({ recordHar: {
  path: harOut, content: 'embed', mode: 'full', ...(urlRegex ? { urlFilter: new RegExp(urlRegex) } : {}),
} });
const page = await context.newPage();
page.on('console', (m) => console.error('[page]', m.text()));
await page.goto(url);
const { truth, error } = await page.evaluate((opts) => window.runScenario(opts), JSON.parse(options));
fs.writeFileSync(truthOut, JSON.stringify(truth, null, 1) + '\n');
await page.waitForTimeout(500);
await context.close();
await browser.close();
const pw = JSON.parse(fs.readFileSync(new URL('./node_modules/playwright-core/package.json', import.meta.url)));
console.log(JSON.stringify({ chromium: version, playwright_core: pw.version }));
if (error) { console.error("the page's client failed:", error); process.exit(1); }
