import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupService } from "@mailroom/proto/audience/v1/groups_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { directoryRoutes, memoryDirectory, type TestDirectory } from "../../services/audience/src/testing.js";
import { CONSOLE_ORIGIN, consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";
import { withHeader } from "./csv-mapping.js";

/**
 * The Suppressions page and the column mapping of CSV imports, over the real audience unit (in
 * memory): search and reason filter, adding an address or a domain, removing (a complaint only
 * with its confirmation), the CSV export, a CSV import through its preview and mapping (and
 * again, changing nothing), the contacts import's mapping, and what a viewer and another
 * workspace see.
 */
const KEYS = { editor: "mr_test_console_supp_editor", viewer: "mr_test_console_supp_viewer", other: "mr_test_console_supp_other" };
const WS = "ws_csupp";
const OTHER = "ws_csupp_other";

describe("console: suppressions", () => {
  let browser: ConsoleBrowser;
  let dir: TestDirectory;
  const editor = new Jar();
  const viewer = new Jar();

  async function signIn(jar: Jar, apiKey: string) {
    const page = await browser.get("/console/sign-in", jar);
    expect((await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey })).statusCode).toBe(303);
  }
  /** A multipart upload as the import forms send it. */
  async function upload(path: string, jar: Jar, csv: string) {
    const page = await browser.get(path, jar);
    const boundary = "----mailroom-test-boundary";
    const payload = [
      `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrfOf(page.body)}\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n`,
      `--${boundary}--\r\n`,
    ].join("");
    return jar.take(await browser.app.inject({
      method: "POST", url: path, payload,
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, origin: CONSOLE_ORIGIN, "sec-fetch-site": "same-origin", cookie: jar.header() },
    }));
  }
  const listed = async (ws = WS) => Object.fromEntries((await dir.suppressions.list(ws, { limit: 100 })).items.map((s) => [s.domain ? `@${s.domain}` : s.emailLower, s.reason]));
  const flashOf = (html: string) => /<div class="flash[^"]*"[^>]*>([\s\S]*?)<\/div>/.exec(html)?.[1] ?? "";

  beforeAll(async () => {
    dir = await memoryDirectory();
    await dir.bootstrap.loadJson(JSON.stringify({ workspaces: [
      { id: WS, name: "Supp", apiKeys: [{ key: KEYS.editor, scopes: ["api_user"] }, { key: KEYS.viewer, scopes: ["api_read"] }] },
      { id: OTHER, name: "Other", apiKeys: [{ key: KEYS.other, scopes: ["api_user"] }] },
    ] }));
    const transport = memoryTransport(directoryRoutes(dir));
    browser = await consoleGateway(transport, {
      secret: "console-suppressions-secret-0123456789abc", name: "console-suppressions", authCacheMs: 0,
      clients: { groups: { listGroups: async () => ({ groups: [], page: { hasMore: false } }) } },
    });
    await signIn(editor, KEYS.editor);
    await signIn(viewer, KEYS.viewer);
    await dir.suppressions.add(OTHER, "secret@other.test", "manual");
  }, 60_000);
  afterAll(async () => browser?.app.close());

  it("adds an address and a domain, finds them by search and reason, and is linked from the nav", async () => {
    const page = await browser.get("/console/suppressions", editor);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<a href="/console/suppressions" aria-current="page">Suppressions</a>');
    expect(page.body).toContain("Nobody is suppressed.");
    const csrf = csrfOf(page.body);
    expect((await browser.post("/console/suppressions", editor, { _csrf: csrf, target: "Ann@Example.test", detail: "asked by <phone>" })).statusCode).toBe(303);
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toContain("Ann@Example.test is suppressed");
    await browser.post("/console/suppressions", editor, { _csrf: csrf, target: "spam-domain.test" });
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toContain("Every address at spam-domain.test is suppressed");
    // Checked with the schema of POST /v1/suppressions before the audience unit is asked.
    await browser.post("/console/suppressions", editor, { _csrf: csrf, target: `${"a".repeat(600)}@example.test` });
    // The flash is the layout's (escaped by it).
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toMatch(/^email: Too big: expected string to have (&#60;|&lt;)=512 characters/);
    await browser.post("/console/suppressions", editor, { _csrf: csrf, target: "not an address@" });
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toMatch(/not a valid (email|domain)/);
    expect(await listed()).toEqual({ "ann@example.test": "manual", "@spam-domain.test": "manual" });

    const all = await browser.get("/console/suppressions", editor);
    expect(all.body).toContain("asked by &lt;phone&gt;");
    expect(all.body).toContain("spam-domain.test <span class=\"muted\">(every address at it)</span>");
    expect(all.body).not.toContain("secret@other.test");
    const search = await browser.get("/console/suppressions?search=ann", editor);
    expect(search.body).toContain("ann@example.test");
    expect(search.body).not.toContain("spam-domain.test <span");
    await dir.suppressions.add(WS, "bounced@example.test", "hard_bounce");
    const bounces = await browser.get("/console/suppressions?reason=hard_bounce", editor);
    expect(bounces.body).toContain("bounced@example.test");
    expect(bounces.body).not.toContain("ann@example.test");
    expect(bounces.body).toContain('<option value="hard_bounce" selected>');
  });

  it("removes a suppression; a complaint only with its confirmation", async () => {
    await dir.suppressions.add(WS, "angry@example.test", "complaint");
    await dir.suppressions.add(WS, "gone@example.test", "manual");
    const page = await browser.get("/console/suppressions", editor);
    // The complaint's form asks for the confirmation; the others do not.
    const angry = /<tr>(?:(?!<tr>)[\s\S])*?angry@example\.test[\s\S]*?<\/tr>/.exec(page.body)?.[0] ?? "";
    expect(angry).toContain('name="force" value="yes" required');
    const csrf = csrfOf(page.body);
    expect((await browser.post("/console/suppressions/remove", editor, { _csrf: csrf, target: "gone@example.test" })).statusCode).toBe(303);
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toContain("gone@example.test is no longer suppressed");
    await browser.post("/console/suppressions/remove", editor, { _csrf: csrf, target: "angry@example.test" });
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toContain("reported this workspace");
    expect((await listed())["angry@example.test"]).toBe("complaint");
    await browser.post("/console/suppressions/remove", editor, { _csrf: csrf, target: "angry@example.test", force: "yes" });
    expect((await listed())["angry@example.test"]).toBeUndefined();
    await browser.post("/console/suppressions/remove", editor, { _csrf: csrf, target: "@spam-domain.test" });
    expect((await listed())["@spam-domain.test"]).toBeUndefined();
    await browser.post("/console/suppressions/remove", editor, { _csrf: csrf, target: "never@example.test" });
    expect(flashOf((await browser.get("/console/suppressions", editor)).body)).toMatch(/not suppressed/);
  });

  it("exports the list as CSV, its own workspace's only", async () => {
    const res = await browser.get("/console/suppressions/export", editor);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/csv/);
    expect(res.headers["content-disposition"]).toMatch(/^attachment; filename="suppressions-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = res.body.trim().split("\n");
    expect(lines[0]).toBe("email,domain,reason,created_at,source");
    expect(lines.slice(1).map((l) => l.split(",").slice(0, 3).join(","))).toEqual(["ann@example.test,,manual", "bounced@example.test,,hard_bounce"]);
    expect(res.body).not.toContain("secret@other.test");
    const bounces = await browser.get("/console/suppressions/export?reason=hard_bounce", editor);
    expect(bounces.body.trim().split("\n")).toHaveLength(2);
  });

  it("imports a CSV through a preview of its first rows and a column mapping; again, it changes nothing", async () => {
    const csv = "Recipient,Why,When,Note\r\nx1@import.test,bounce,2025-01-02,first\r\nx2@import.test,spam,,second\r\nimport-domain.test,,2025-01-03T10:00:00Z,third\r\n" +
      "x4@import.test,???,,fourth\r\nx5@import.test,,yesterday,fifth\r\nx6@import.test,unsubscribe,,sixth\r\n";
    const res = await upload("/console/suppressions/import", editor, csv);
    expect(res.statusCode).toBe(303);
    const previewPath = res.headers.location as string;
    expect(previewPath).toMatch(/^\/console\/suppressions\/import\/upl_[0-9a-f]{24}$/);
    const preview = await browser.get(previewPath, editor);
    expect(preview.statusCode).toBe(200);
    expect(preview.body).toContain("The first 5 rows of the file");
    expect(preview.body).toContain("<td>x1@import.test</td>");
    expect(preview.body).not.toContain("<td>x6@import.test</td>");
    // Guessed from the headers: Recipient is the address; Why, When and Note are for the user to choose.
    expect(preview.body).toMatch(/<select id="col-0" name="col.0">[\s\S]*?<option value="email" selected>/);
    // Another workspace cannot see the upload.
    const other = new Jar();
    await signIn(other, KEYS.other);
    expect((await browser.get(previewPath, other)).statusCode).toBe(404);

    const done = await browser.post(previewPath, editor, { _csrf: csrfOf(preview.body), "col.0": "address", "col.1": "reason", "col.2": "created_at", "col.3": "", defaultReason: "manual" });
    expect(done.statusCode).toBe(200);
    expect(done.body).toMatch(/<strong>6<\/strong> rows: <strong>4<\/strong> suppressed, <strong>0<\/strong> already suppressed, <strong>2<\/strong> rejected/);
    expect(done.body).toMatch(/reason &quot;\?\?\?&quot; is not one of hard_bounce/);
    expect(done.body).toContain("yesterday&quot; is not a date");
    expect(await listed()).toMatchObject({ "x1@import.test": "hard_bounce", "x2@import.test": "complaint", "@import-domain.test": "manual", "x6@import.test": "unsubscribed" });
    const x1 = (await dir.suppressions.list(WS, { search: "x1@" })).items[0];
    expect([x1.source, new Date(x1.createdAt).toISOString()]).toEqual(["console import", "2025-01-02T00:00:00.000Z"]);
    // The upload is gone once imported.
    expect((await browser.get(previewPath, editor)).statusCode).toBe(404);

    const again = await upload("/console/suppressions/import", editor, csv);
    const page = await browser.get(again.headers.location as string, editor);
    const second = await browser.post(again.headers.location as string, editor, { _csrf: csrfOf(page.body), "col.0": "address", "col.1": "reason", "col.2": "created_at", defaultReason: "manual" });
    expect(second.body).toMatch(/<strong>0<\/strong> suppressed, <strong>4<\/strong> already suppressed/);
    // A mapping without the address column is sent back with the reason.
    const third = await upload("/console/suppressions/import", editor, csv);
    const thirdPage = await browser.get(third.headers.location as string, editor);
    await browser.post(third.headers.location as string, editor, { _csrf: csrfOf(thirdPage.body), "col.1": "reason" });
    expect(flashOf((await browser.get(third.headers.location as string, editor)).body)).toContain("Choose the column that holds the email address or domain");
    expect(await listed(OTHER)).toEqual({ "secret@other.test": "manual" });
  });

  it("refuses a file that is not CSV at the upload, with the reason", async () => {
    const res = await upload("/console/suppressions/import", editor, 'email\n"never closed\n');
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/suppressions/import");
    expect(flashOf((await browser.get("/console/suppressions/import", editor)).body)).toContain("not a CSV file we can read");
  });

  it("shows a viewer the list without forms, and refuses its posts", async () => {
    const page = await browser.get("/console/suppressions", viewer);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("ann@example.test");
    expect(page.body).not.toContain('action="/console/suppressions/remove"');
    expect(page.body).not.toContain("Import CSV");
    const res = await browser.post("/console/suppressions", viewer, { _csrf: csrfOf(page.body), target: "v@example.test" });
    expect(res.statusCode).toBe(403);
    expect((await browser.get("/console/suppressions/import", viewer)).statusCode).toBe(403);
    expect((await browser.get("/console/contacts/suppressions", viewer)).headers.location).toBe("/console/suppressions");
  });

  it("maps the columns of a contacts CSV before importing it", async () => {
    await dir.properties.create(WS, { slug: "plan", type: "string" });
    const csv = "E-Mail,Given,Plan level,Notes\nmapped@example.test,Mia,pro,ignore me\nsecond@example.test,Sam,free,\n";
    const res = await upload("/console/contacts/import/preview", editor, csv);
    expect(res.statusCode).toBe(303);
    const previewPath = res.headers.location as string;
    expect(previewPath).toMatch(/^\/console\/contacts\/import\/preview\/upl_[0-9a-f]{24}$/);
    const preview = await browser.get(previewPath, editor);
    expect(preview.body).toContain("<td>mapped@example.test</td>");
    expect(preview.body).toMatch(/<option value="plan">Property: [^<]+<\/option>/);
    const started = await browser.post(previewPath, editor, { _csrf: csrfOf(preview.body), "col.0": "email", "col.1": "firstName", "col.2": "plan", "col.3": "" });
    expect(started.statusCode).toBe(303);
    expect(started.headers.location).toMatch(/^\/console\/contacts\/import\/imp_/);
    await expect.poll(async () => (await dir.contacts.findOne(WS, "second@example.test"))?.firstName, { timeout: 5_000 }).toBe("Sam");
    const mia = await dir.contacts.get(WS, "mapped@example.test");
    expect([mia.firstName, mia.properties.plan, "notes" in mia.properties]).toEqual(["Mia", "pro", false]);
    const twice = await browser.post(previewPath, editor, { _csrf: csrfOf(preview.body), "col.0": "email", "col.1": "email" });
    expect(twice.statusCode).toBe(404); // used up: the upload went with the import
  });

  it("rewrites only the header of a mapped file, keeping every row and its line", () => {
    const file = Buffer.from('\uFEFFa,"b\nc",d\r\n1,2,3\r\n"x\ny",5,6\r\n');
    expect(withHeader(file, ["email", "", "plan"]).toString()).toBe('email,,plan\n\r\n1,2,3\r\n"x\ny",5,6\r\n');
    expect(withHeader(Buffer.from("a,b\n1,2\n"), ["email", "first name"]).toString()).toBe("email,first name\n1,2\n");
  });
});
