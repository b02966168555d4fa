import http from "node:http";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import type { FastifyInstance } from "fastify";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createLogger, loadConfig } from "@mailroom/kit";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { directoryRoutes, memoryDirectory } from "../../services/audience/src/testing.js";
import { buildGateway } from "../../gateway/src/app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { FakeReceiving } from "../../gateway/src/routes/receiving-fake.testing.js";
import { freePort } from "../harness/ports.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * A received email's HTML in a real browser (Debian's chromium through playwright-core): the
 * console's received-email page shows it in its sandboxed frame, where a hostile message tries
 * every way to run code and to reach the network (script, remote image, stylesheet, CSS
 * background, font, nested frame, meta refresh, form, link). A local server counts what
 * reaches it: nothing may. The frame still shows the message's text. The gateway runs over a stand-in ReceivingService (the page's data) and the
 * accounts and audience units in memory. Screenshot in test-results/console/.
 */
const KEY = "mr_test_console_received_1";
const SHOTS = path.join(process.cwd(), "test-results", "console");
/** A 1×1 red PNG. */
const DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-received: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

describe.skipIf(!existsSync(CHROMIUM))("console: a received email's HTML runs and fetches nothing", () => {
  let app: FastifyInstance;
  let tracker: http.Server;
  let browser: Browser;
  let page: Page;
  let base = "";
  const hits: string[] = [];
  const dialogs: string[] = [];

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    tracker = http.createServer((req, res) => {
      hits.push(req.url ?? "");
      res.end("");
    });
    await new Promise<void>((resolve) => tracker.listen(0, "127.0.0.1", resolve));
    const t = `http://127.0.0.1:${(tracker.address() as { port: number }).port}`;

    const dir = await memoryDirectory();
    await dir.bootstrap.loadJson(JSON.stringify({ workspaces: [{ id: "ws_brcv", name: "Received", apiKeys: [{ key: KEY, scopes: ["api_user"] }] }] }));
    const fake = new FakeReceiving();
    fake.plant({
      id: "rcv_hostile", workspaceId: "ws_brcv", subject: "Hostile message", envelopeTo: ["support@in.acme.test"],
      receivedAt: timestampFromDate(new Date("2030-01-02T10:00:00Z")), text: "plain", strippedTextReply: "plain",
      html: `<html><head><link rel="stylesheet" href="${t}/style.css"><meta http-equiv="refresh" content="1;url=${t}/refresh">
<style>@font-face{font-family:x;src:url(${t}/font.woff)} body{font-family:x} .bg{background:url(${t}/bg.png)}</style></head>
<body><p id="greeting">Hello from the message</p><img id="dot" src="data:image/png;base64,${DOT}" width="20" height="20">
<img src="${t}/open.gif"><div class="bg">bg</div><iframe src="${t}/frame"></iframe>
<script>fetch("${t}/script");alert("xss");parent.document.title="pwned";</script><img src="x" onerror="fetch('${t}/onerror')">
<form id="f" action="${t}/form" method="post"><input name="a" value="1"><button id="send">Send</button></form><a id="link" href="${t}/link">a link</a></body></html>`,
    });
    const transport = memoryTransport(directoryRoutes(dir));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = await buildGateway({
      config: loadConfig({ MAILROOM_SECRET: "browser-received-secret-0123456789abcdef", MAILROOM_PUBLIC_URL: base }),
      logger: createLogger("browser-received", "silent"),
      clients: { accounts: createClient(AccountsService, transport), contacts: createClient(ContactService, transport), receiving: fake.client() } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 0,
    }, { api: [], public: [] });
    await app.listen({ port, host: "127.0.0.1" });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 1000 } })).newPage();
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await signInWithKey(page, `${base}/console/sign-in`, KEY);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await new Promise((r) => tracker?.close(r));
  });

  it("shows the message's text in the frame, and nothing of it runs or reaches the network, not even when clicked", async () => {
    await page.goto(`${base}/console/received/rcv_hostile`);
    const title = await page.title();
    const frame = page.frameLocator("#received-html");
    // The frame renders the message (no script of ours can run in it: Playwright reads it from outside).
    await expect(frame.locator("#greeting").textContent({ timeout: 10_000 })).resolves.toBe("Hello from the message");
    // Try the ways a user could set something off: a click on the link, a form's button.
    await frame.locator("#link").click({ timeout: 2000 }).catch(() => {});
    await frame.locator("#send").click({ timeout: 2000 }).catch(() => {});
    // The meta refresh would fire after a second; give everything time to try.
    await page.waitForTimeout(2500);
    await page.screenshot({ path: path.join(SHOTS, "received-email.png"), fullPage: true });

    expect(hits).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(await page.title()).toBe(title);
    expect(title).not.toBe("pwned");
    // The page is still the console's page (no navigation of the top or the frame away).
    // (A clicked link may leave the frame on the browser's blocked-page: the page's frame-src
    // refused the navigation, which the empty `hits` shows never reached the network.)
    expect(new URL(page.url()).pathname).toBe("/console/received/rcv_hostile");
  }, 60_000);
});
