import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { directoryRoutes, memoryDirectory } from "../../services/audience/src/testing.js";
import { FakeReceiving, FAKE_MX_HOST } from "../../gateway/src/routes/receiving-fake.testing.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";
import { FRAME_CSP, frameDocument } from "./views/received.js";

/**
 * The Inbound and Received pages over a stand-in ReceivingService (and the real accounts unit in
 * memory for sign-in): inbound domains with their MX record, verification and deletion; rules
 * (a forward needs an address); the received list with reply badges and attachment counts; an
 * email's page with its headers, stripped reply and text escaped, attachments downloadable,
 * and the HTML only inside a sandboxed srcdoc frame whose policy fetches nothing. A viewer
 * only looks; another workspace sees none of it.
 */
const KEYS = { editor: "mr_test_console_rcv_editor", viewer: "mr_test_console_rcv_viewer", other: "mr_test_console_rcv_other" };
const WS = "ws_crcv";
const OTHER = "ws_crcv_other";

const HOSTILE_HTML = `<p>Hi <b>there</b></p><script>parent.document.title="pwned"</script><img src="https://tracker.example/open.gif"><a href="https://evil.example/">x</a></textarea>"'`;
const PDF = randomBytes(90_000);

describe("console: inbound domains and received emails", () => {
  let browser: ConsoleBrowser;
  let fake: FakeReceiving;
  const editor = new Jar();
  const viewer = new Jar();
  const other = new Jar();

  async function signIn(jar: Jar, apiKey: string) {
    const page = await browser.get("/console/sign-in", jar);
    expect((await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey })).statusCode).toBe(303);
  }
  const flashOf = (html: string) => /<div class="flash[^"]*"[^>]*>([\s\S]*?)<\/div>/.exec(html)?.[1] ?? "";
  /** Posts a page's form and follows the redirect, as a browser does. */
  async function submit(jar: Jar, page: string, action: string, form: Record<string, string>) {
    const csrf = csrfOf((await browser.get(page, jar)).body);
    const res = await browser.post(action, jar, { _csrf: csrf, ...form });
    expect(res.statusCode, res.body.slice(0, 300)).toBe(303);
    return browser.get(String(res.headers.location), jar);
  }

  beforeAll(async () => {
    const dir = await memoryDirectory();
    await dir.bootstrap.loadJson(JSON.stringify({ workspaces: [
      { id: WS, name: "Receiving", apiKeys: [{ key: KEYS.editor, scopes: ["api_user"] }, { key: KEYS.viewer, scopes: ["api_read"] }] },
      { id: OTHER, name: "Other", apiKeys: [{ key: KEYS.other, scopes: ["api_user"] }] },
    ] }));
    fake = new FakeReceiving();
    browser = await consoleGateway(memoryTransport(directoryRoutes(dir)), {
      secret: "console-receiving-secret-0123456789abcdef", name: "console-receiving", authCacheMs: 0,
      clients: { receiving: fake.client() },
    });
    await signIn(editor, KEYS.editor);
    await signIn(viewer, KEYS.viewer);
    await signIn(other, KEYS.other);
    fake.plant({
      id: "rcv_reply", workspaceId: WS, subject: "Re: <Invoice> & more", envelopeTo: ["support@in.acme.test"],
      from: { address: "bob@example.test", name: "Bob <the builder>" }, to: [{ address: "support@in.acme.test", name: "" }],
      inReplyTo: { emailId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye", broadcastId: "", contactId: "ct_1" },
      receivedAt: timestampFromDate(new Date("2030-01-02T10:00:00Z")), spamScore: 2.5, action: "webhook", ruleId: "inr_1",
      text: "Thanks <b>a lot</b>\n> old", strippedTextReply: "Thanks <b>a lot</b>", html: HOSTILE_HTML,
      headers: [{ $typeName: "mailroom.inbound.v1.ReceivedHeader", name: "X-Weird", value: "<img src=x onerror=alert(1)>" }],
      attachments: [{ id: "att_1", filename: "report <1>.pdf", contentType: "application/pdf", bytes: PDF }, { id: "att_2", filename: "logo.png", contentType: "image/png", disposition: "inline", contentId: "logo", bytes: Buffer.from("png") }],
      raw: Buffer.from("Subject: Re: Invoice\r\n\r\nThanks\r\n"),
    });
    fake.plant({ id: "rcv_bcast", workspaceId: WS, subject: "Re: newsletter", envelopeTo: ["reply+abc@in.acme.test"], mailboxHash: "abc",
      inReplyTo: { emailId: "", broadcastId: "brd_7", contactId: "ct_2" }, receivedAt: timestampFromDate(new Date("2030-01-01T10:00:00Z")) });
    fake.plant({ id: "rcv_secret", workspaceId: OTHER, subject: "Other workspace secret", envelopeTo: ["x@in.other.test"], attachments: [{ id: "att_1", bytes: Buffer.from("secret") }] });
  }, 60_000);
  afterAll(async () => browser?.app.close());

  it("lists both pages in the nav", async () => {
    const page = await browser.get("/console/inbound", editor);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/console/inbound" aria-current="page">Inbound</a>');
    expect(page.body).toContain('<a href="/console/received">Received</a>');
    expect(page.body).toContain("No inbound domains yet.");
  });

  it("adds a domain, shows the MX record to publish and its status, verifies it, and refuses what is no domain", async () => {
    const bad = await submit(editor, "/console/inbound", "/console/inbound", { domain: "not a domain" });
    expect(flashOf(bad.body)).toMatch(/domain: must be a domain name such as in\.acme\.com/);
    expect(fake.domains).toEqual([]);

    const detail = await submit(editor, "/console/inbound", "/console/inbound", { domain: "In.Acme.test" });
    expect(flashOf(detail.body)).toContain("in.acme.test added. Publish its MX record");
    const id = fake.domains[0]!.id;
    expect(fake.domains[0]).toMatchObject({ workspaceId: WS, domain: "in.acme.test" });
    expect(detail.body).toContain('<h1>in.acme.test</h1>');
    const mx = /<table class="data stack" id="mx-record">[\s\S]*?<\/table>/.exec(detail.body)![0];
    expect(mx).toContain(`<code class="value one-line">${FAKE_MX_HOST}</code>`);
    expect(mx).toContain('<td data-label="Priority" class="num">10</td>');
    expect(detail.body).toContain("Pending DNS");
    expect(detail.body).toContain("No rules yet");

    const unverified = await submit(editor, `/console/inbound/${id}`, `/console/inbound/${id}/verify`, {});
    expect(flashOf(unverified.body)).toBe("in.acme.test is not verified yet: no MX record");
    expect(unverified.body).toContain("Last check: no MX record");
    fake.published.add("in.acme.test");
    const verified = await submit(editor, `/console/inbound/${id}`, `/console/inbound/${id}/verify`, {});
    expect(flashOf(verified.body)).toContain("in.acme.test is verified");
    expect(verified.body).toMatch(/<strong id="inbound-status"><span class="badge ok">Verified<\/span><\/strong>/);

    const list = await browser.get("/console/inbound", editor);
    expect(list.body).toContain(`<a href="/console/inbound/${id}">in.acme.test</a>`);
    expect(list.body).toContain(`<code>in.acme.test MX 10 ${FAKE_MX_HOST}</code>`);
    // A failure the unit reports is escaped like everything else.
    fake.domains[0]!.status = "pending";
    fake.domains[0]!.failure = "MX names other hosts: <b>mx.evil</b>";
    expect((await browser.get(`/console/inbound/${id}`, editor)).body).toContain("Last check: MX names other hosts: &lt;b&gt;mx.evil&lt;/b&gt;");
    fake.domains[0]!.status = "verified";
  });

  it("adds rules (a forward needs an address), lists and deletes them", async () => {
    const id = fake.domains[0]!.id;
    const page = `/console/inbound/${id}`;
    const noAddress = await submit(editor, page, `${page}/rules`, { match: "support", action: "forward", forwardTo: "" });
    expect(flashOf(noAddress.body)).toBe("forwardTo: is required when action is forward");
    const badMatch = await submit(editor, page, `${page}/rules`, { match: "sup*port", action: "webhook", forwardTo: "" });
    expect(flashOf(badMatch.body)).toMatch(/^match: must be &quot;\*&quot;/);
    const stray = await submit(editor, page, `${page}/rules`, { match: "support", action: "store", forwardTo: "team@example.test" });
    expect(flashOf(stray.body)).toMatch(/forwardTo: is only for action forward/);
    expect(fake.rules).toEqual([]);

    const forward = await submit(editor, page, `${page}/rules`, { match: "Support", action: "forward", forwardTo: "team@example.test" });
    expect(flashOf(forward.body)).toBe("Rule support added.");
    await submit(editor, page, `${page}/rules`, { match: "reply+*", action: "webhook", forwardTo: "" });
    const listed = await browser.get(page, editor);
    const rules = /<table class="data stack" id="rules">[\s\S]*?<\/table>/.exec(listed.body)![0];
    expect(rules).toContain("Forward to <code>team@example.test</code>");
    expect(rules).toContain("<code>reply+* (plus-addresses)</code>");
    expect(fake.rules.map((r) => [r.workspaceId, r.match, r.action, r.forwardTo])).toEqual([[WS, "support", "forward", "team@example.test"], [WS, "reply+*", "webhook", ""]]);
    const dup = await submit(editor, page, `${page}/rules`, { match: "support", action: "store", forwardTo: "" });
    expect(flashOf(dup.body)).toContain("has a rule for support already");

    const ruleId = fake.rules[1]!.id;
    expect(rules).toContain(`action="/console/inbound/${id}/rules/${ruleId}/delete"`);
    const deleted = await submit(editor, page, `${page}/rules/${ruleId}/delete`, {});
    expect(flashOf(deleted.body)).toBe("Rule deleted.");
    expect(fake.rules.map((r) => r.match)).toEqual(["support"]);
  });

  it("shows a viewer the domains without any form, and refuses its posts", async () => {
    const id = fake.domains[0]!.id;
    const page = await browser.get(`/console/inbound/${id}`, viewer);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(FAKE_MX_HOST);
    expect(page.body).not.toContain("<form method=\"post\" action=\"/console/inbound");
    expect((await browser.get("/console/inbound", viewer)).body).not.toContain('name="domain"');
    const res = await browser.post(`/console/inbound/${id}/delete`, viewer, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(403);
    expect(fake.domains).toHaveLength(1);
  });

  it("keeps another workspace out of the domain", async () => {
    const id = fake.domains[0]!.id;
    expect((await browser.get("/console/inbound", other)).body).not.toContain("in.acme.test");
    expect((await browser.get(`/console/inbound/${id}`, other)).statusCode).toBe(404);
    const csrf = csrfOf((await browser.get("/console/inbound", other)).body);
    expect((await browser.post(`/console/inbound/${id}/delete`, other, { _csrf: csrf })).statusCode).toBe(404);
    expect((await browser.post(`/console/inbound/${id}/rules`, other, { _csrf: csrf, match: "x", action: "store" })).statusCode).toBe(404);
    expect(fake.domains).toHaveLength(1);
    expect((await browser.get("/console/inbound/not-an-id", editor)).statusCode).toBe(404);
  });

  it("deletes a domain with its rules", async () => {
    const id = fake.domains[0]!.id;
    const list = await submit(editor, `/console/inbound/${id}`, `/console/inbound/${id}/delete`, {});
    expect(flashOf(list.body)).toContain("deleted");
    expect(fake.domains).toEqual([]);
    expect(fake.rules).toEqual([]);
  });

  it("lists received emails: from, to, subject, received at, a reply badge linking what it answers, the attachment count", async () => {
    const page = await browser.get("/console/received", editor);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/console/received" aria-current="page">Received</a>');
    const rows = /<tbody>([\s\S]*?)<\/tbody>/.exec(page.body)![1]!.split("</tr>").filter((r) => r.includes("<td"));
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain("Bob &lt;the builder&gt; &lt;bob@example.test&gt;");
    expect(rows[0]).toContain("support@in.acme.test");
    expect(rows[0]).toContain('<a href="/console/received/rcv_reply">Re: &lt;Invoice&gt; &amp; more</a>');
    expect(rows[0]).toContain('<a href="/console/emails/trs_01jqz8k4m2x7v9c3n5b6t1w0ye" class="reply-to"><span class="badge info">Reply to an email</span></a>');
    expect(rows[0]).toContain('<time datetime="2030-01-02T10:00:00.000Z">');
    expect(rows[0]).toContain('<td data-label="Attachments" class="num">2</td>');
    expect(rows[1]).toContain('<a href="/console/broadcasts/brd_7" class="reply-to"><span class="badge info">Reply to a broadcast</span></a>');
    expect(page.body).not.toContain("Other workspace secret");
    expect(fake.calls.filter((c) => c.method === "listReceivedEmails").every((c) => c.workspaceId === WS)).toBe(true);

    const filtered = await browser.get("/console/received?to=Reply%2Babc%40in.acme.test&since=2029-12-31", editor);
    expect(filtered.body).toContain("rcv_bcast");
    expect(filtered.body).not.toContain("rcv_reply");
    expect(filtered.body).toContain('value="Reply+abc@in.acme.test"');
    expect((await browser.get("/console/received?since=yesterday", editor)).statusCode).toBe(400);
    expect((await browser.get("/console/received?to=%3Cb%3E", editor)).body).toContain("must be a whole email address");
    expect((await browser.get("/console/received", other)).body).toContain("Other workspace secret");
  });

  it("shows an email: details, headers, stripped reply and text escaped; the HTML only in a sandboxed frame that fetches nothing", async () => {
    const page = await browser.get("/console/received/rcv_reply", editor);
    expect(page.statusCode).toBe(200);
    const body = page.body;
    expect(body).toContain("<h1>Re: &lt;Invoice&gt; &amp; more</h1>");
    expect(body).toContain('<pre id="stripped-reply">Thanks &lt;b&gt;a lot&lt;/b&gt;</pre>');
    expect(body).toContain('<pre id="text">Thanks &lt;b&gt;a lot&lt;/b&gt;\n&gt; old</pre>');
    expect(body).toContain('<tr><th scope="row">X-Weird</th><td><code>&lt;img src=x onerror=alert(1)&gt;</code></td></tr>');
    expect(body).toContain('<tr><th scope="row">Spam score</th><td>2.5</td></tr>');
    expect(body).toContain('href="/console/emails/trs_01jqz8k4m2x7v9c3n5b6t1w0ye"');
    expect(body).toContain('<a href="/console/received/rcv_reply/raw">');
    expect(body).toContain('<a href="/console/received/rcv_reply/attachments/att_1" download="report &lt;1&gt;.pdf">report &lt;1&gt;.pdf</a>');
    expect(body).toContain('logo.png</a> <span class="muted">(inline)</span>');

    // Nothing of the message is markup of the page: its only scripts are the console's own.
    expect(body).not.toContain("<script>parent");
    expect(body).not.toContain('<img src="https://tracker.example');
    expect(body.match(/<script>/g)).toHaveLength(1);
    // The frame: sandboxed with no permission at all, its document inline, the policy first.
    const frames = [...body.matchAll(/<iframe\b[^>]*>/g)].map((m) => m[0]);
    expect(frames).toHaveLength(1);
    const frame = frames[0]!;
    expect(frame).toContain('sandbox=""');
    const srcdoc = /srcdoc="([^"]*)"/.exec(frame)![1]!;
    expect(frame.replace(srcdoc, "")).not.toMatch(/allow-scripts|allow-same-origin|\ssrc=/);
    const decoded = srcdoc.replace(/&(lt|gt|quot|#39|amp);/g, (_m, e: string) => ({ lt: "<", gt: ">", quot: '"', "#39": "'", amp: "&" })[e]!);
    expect(decoded).toBe(frameDocument(HOSTILE_HTML));
    expect(decoded.indexOf(`<meta http-equiv="Content-Security-Policy" content="${FRAME_CSP}">`)).toBeLessThan(decoded.indexOf("<p>Hi"));
    expect(FRAME_CSP).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src data: cid:");
    // The page's own policy keeps a clicked link out of the frame (frame-src falls back to 'none').
    expect(page.headers["content-security-policy"]).toMatch(/^default-src 'none';/);
    expect(page.headers["content-security-policy"]).not.toMatch(/frame-src|child-src/);
  });

  it("downloads an attachment and the raw message of its own workspace only", async () => {
    const file = await browser.get("/console/received/rcv_reply/attachments/att_1", editor);
    expect(file.statusCode).toBe(200);
    expect(file.rawPayload.equals(PDF)).toBe(true);
    expect(file.headers["content-disposition"]).toBe(`attachment; filename="report <1>.pdf"; filename*=UTF-8''report%20%3C1%3E.pdf`);
    expect(file.headers["x-content-type-options"]).toBe("nosniff");
    expect(file.headers["content-length"]).toBe(String(PDF.byteLength));
    const raw = await browser.get("/console/received/rcv_reply/raw", viewer);
    expect(raw.headers["content-type"]).toBe("message/rfc822");
    expect(raw.body).toBe("Subject: Re: Invoice\r\n\r\nThanks\r\n");

    expect((await browser.get("/console/received/rcv_secret", editor)).statusCode).toBe(404);
    expect((await browser.get("/console/received/rcv_secret/attachments/att_1", editor)).statusCode).toBe(404);
    expect((await browser.get("/console/received/rcv_reply/attachments/att_1", other)).statusCode).toBe(404);
    expect((await browser.get("/console/received/rcv_reply/attachments/..%2F..", editor)).statusCode).toBe(404);
    expect((await browser.get("/console/received/x", editor)).statusCode).toBe(404);
    expect((await browser.get("/console/received/rcv_secret/attachments/att_1", other)).body).toBe("secret");
  });
});
