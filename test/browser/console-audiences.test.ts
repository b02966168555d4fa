import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { CHROMIUM, launchChromium, signInWithKey } from "./chromium.js";

/**
 * The console's audience pages in a real browser (Debian's chromium through playwright-core)
 * against the real system (every unit a process, nats-server, an SMTP sink): a group with
 * contacts added and removed by email, a segment built row by row whose live count matches
 * the API's count (and an invalid filter's message shown inline), a topic, a signup form with
 * its embed snippet (and a signup through the snippet's endpoint joining the form's group),
 * and a broadcast draft whose audience is a group, counted before scheduling.
 * Screenshots go to test-results/console/.
 */
const KEY = "mr_test_console_audiences_1";
const OTHER_KEY = "mr_test_console_audiences_2";
const READ_KEY = "mr_test_console_audiences_read";
const SHOTS = path.join(process.cwd(), "test-results", "console");

if (!existsSync(CHROMIUM)) console.log(`test/browser/console-audiences: skipped, ${CHROMIUM} is not installed (apt-get install chromium)`);

const person = (email: string, firstName: string, plan: string, subscribed = true) => ({ email, firstName, subscribed, properties: { plan } });
const workspace = (id: string, key: string, contacts: unknown[] = []) => ({
  id, name: id === "ws_audiences" ? "Audience Co" : id, timezone: "UTC",
  apiKeys: [{ key, scopes: ["api_user"] }, ...(key === KEY ? [{ key: READ_KEY, scopes: ["api_read"] }] : [])],
  verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
  monthlyLimit: 10_000, sendingAccountNew: false,
  contactProperties: [{ slug: "plan", type: "string" }],
  contacts,
});

describe.skipIf(!existsSync(CHROMIUM))("console: groups, segments, topics, forms and the audience picker in a browser", () => {
  let sys: TestSystem;
  let browser: Browser;
  let page: Page;
  let groupId = "";
  let segmentId = "";
  let topicId = "";

  const shot = async (name: string) => {
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  const url = (p: string) => `${sys.gatewayUrl}/console${p}`;
  const flash = () => page.locator(".flash").first().textContent();
  const api = (method: string, p: string, body?: unknown) => sys.api(method, p, { key: KEY, body });
  const expectLabelled = async () => {
    const unlabelled = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLInputElement>("input:not([type=hidden]), select, textarea")]
        .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label") && !el.getAttribute("aria-labelledby"))
        .map((el) => el.outerHTML.slice(0, 100)));
    expect(unlabelled).toEqual([]);
  };

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    sys = await useSystem({
      bootstrap: {
        workspaces: [
          workspace("ws_audiences", KEY, [
            person("ann@example.test", "Ann", "pro"),
            person("bob@example.test", "Bob", "free"),
            person("cid@example.test", "Cid", "pro", false),
            person("dan@example.test", "Dan", "pro"),
            person("eve@example.test", "Eve", "free"),
          ]),
          workspace("ws_audiences_other", OTHER_KEY, [person("zed@example.test", "Zed", "pro")]),
        ],
      },
    });
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    page.on("dialog", (d) => void d.accept());
    await signInWithKey(page, url("/sign-in"), KEY);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("creates a group, adds contacts by email, removes one, and refuses an unknown address", async () => {
    await page.getByRole("link", { name: "Groups", exact: true }).click();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Groups");
    await expectLabelled();
    await page.getByLabel("Public id").fill("vip");
    await page.getByLabel("Display name (optional)").fill("VIP customers");
    await page.getByRole("button", { name: "Create group" }).click();
    expect(await flash()).toContain("VIP customers created");
    groupId = /\/groups\/(grp_[0-9a-z]{26})$/.exec(new URL(page.url()).pathname)![1];

    for (const email of ["ann@example.test", "bob@example.test", "cid@example.test"]) {
      await page.getByLabel("Add a contact (email)").fill(email);
      await page.getByRole("button", { name: "Add to group" }).click();
      expect(await flash()).toContain(`${email} added to the group`);
    }
    // Adding again is no error, and another workspace's contact is not found.
    await page.getByLabel("Add a contact (email)").fill("ann@example.test");
    await page.getByRole("button", { name: "Add to group" }).click();
    expect(await flash()).toContain("was in the group already");
    await page.getByLabel("Add a contact (email)").fill("zed@example.test");
    await page.getByRole("button", { name: "Add to group" }).click();
    expect(await page.getByRole("alert").first().textContent()).toContain("No contact with the address zed@example.test");
    expect(await page.locator("#member-count").textContent()).toBe("3");

    await page.getByRole("button", { name: "Remove bob@example.test from the group" }).click();
    expect(await flash()).toContain("removed from the group");
    expect(await page.locator("#member-count").textContent()).toBe("2");
    await page.getByLabel("Add a contact (email)").fill("bob@example.test");
    await page.getByRole("button", { name: "Add to group" }).click();
    const emails = await page.locator("table tbody tr td:first-child a").allTextContents();
    expect(emails.sort()).toEqual(["ann@example.test", "bob@example.test", "cid@example.test"]);
    await expectLabelled();
    await shot("audiences-group");

    // The API agrees, and the list shows the count.
    const members = await api("GET", `/v1/groups/${groupId}/contacts`);
    expect(members.status).toBe(200);
    expect(members.body.items).toHaveLength(3);
    await page.getByRole("link", { name: "Groups", exact: true }).click();
    expect(await page.locator("td[data-members]").first().textContent()).toBe("3");

    // Renaming, and another workspace never sees the group.
    await page.goto(url(`/groups/${groupId}`));
    await page.getByLabel("Display name").fill("VIPs");
    await page.getByRole("button", { name: "Rename" }).click();
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("VIPs");
    const other = await sys.api("GET", `/v1/groups/${groupId}`, { key: OTHER_KEY });
    expect(other.status).toBe(404);
  });

  it("builds a segment row by row with a live count that matches the API's count", async () => {
    await page.getByRole("link", { name: "Segments", exact: true }).click();
    await page.getByRole("link", { name: "New segment" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Pro or VIP");
    const count = () => page.locator("#fb-count").textContent();

    // No condition: everyone (5 contacts, any status).
    await expect.poll(count, { timeout: 10_000 }).toBe("5");
    await page.getByRole("button", { name: "Add condition" }).click();
    await page.getByLabel("Field of condition 1").selectOption("properties.plan");
    await page.getByLabel("Operator of condition 1").selectOption("eq");
    await page.getByLabel("Value of condition 1").fill("pro");
    await expect.poll(count, { timeout: 10_000 }).toBe("3");

    await page.getByRole("button", { name: "Add condition" }).click();
    await page.getByLabel("Field of condition 2").selectOption("groups");
    await page.getByLabel("Operator of condition 2").selectOption("eq");
    await page.getByLabel("Value of condition 2").selectOption(groupId);
    // AND: pro and in the group (ann, cid).
    await expect.poll(count, { timeout: 10_000 }).toBe("2");
    await page.getByLabel("Contacts matching").selectOption("or");
    // OR: pro or in the group (ann, bob, cid, dan).
    await expect.poll(count, { timeout: 10_000 }).toBe("4");
    expect(JSON.parse(await page.getByLabel("Filter (JSON)").inputValue())).toEqual({ $or: [{ "properties.plan": "pro" }, { groups: groupId }] });
    await expectLabelled();
    await shot("audiences-segment-builder");

    // An incomplete row is named before anything is asked; an unknown property is the service's invalid_filter, inline.
    await page.getByRole("button", { name: "Add condition" }).click();
    await page.getByLabel("Field of condition 3").selectOption("createdAt");
    await page.getByLabel("Operator of condition 3").selectOption("withinDays");
    expect(await page.locator("#fb-row-error-2").textContent()).toContain("whole number of days");
    await page.getByRole("button", { name: "Remove condition 3" }).click();
    const good = await page.getByLabel("Filter (JSON)").inputValue();
    await page.getByLabel("Filter (JSON)").fill('{"properties.nope": "x"}');
    await expect.poll(() => page.locator("#fb-error").textContent(), { timeout: 10_000 }).toContain('unknown property "nope"');
    expect(await page.locator("#fb-error").textContent()).toContain("Invalid filter");
    expect(await count()).toBe("—");
    await shot("audiences-segment-invalid");
    await page.getByLabel("Filter (JSON)").fill(good);
    await expect.poll(count, { timeout: 10_000 }).toBe("4");
    // The JSON typed back is shown as rows again.
    expect(await page.getByLabel("Field of condition 2").inputValue()).toBe("groups");

    await page.getByRole("button", { name: "Save segment" }).click();
    expect(await flash()).toContain("Segment Pro or VIP saved");
    segmentId = /\/segments\/(seg_[0-9a-z]{26})$/.exec(new URL(page.url()).pathname)![1];
    const apiCount = await api("GET", `/v1/segments/${segmentId}/count`);
    expect(apiCount.status).toBe(200);
    expect(apiCount.body.count).toBe(4);
    expect(await page.locator("#segment-count").textContent()).toBe("4");
    expect((await page.locator("table tbody tr").count())).toBe(4);
    await shot("audiences-segment");

    // Editing reads the saved filter back into rows.
    await page.getByRole("link", { name: "Edit segment" }).click();
    expect(await page.getByLabel("Contacts matching").inputValue()).toBe("or");
    expect(await page.getByLabel("Value of condition 1").inputValue()).toBe("pro");
    await expect.poll(count, { timeout: 10_000 }).toBe("4");
  });

  it("creates and edits a topic", async () => {
    await page.getByRole("link", { name: "Topics", exact: true }).click();
    await page.getByLabel("Name", { exact: true }).fill("Product news");
    await page.getByLabel("Description (optional; shown on the preference page)").fill("New features, once a month");
    await page.getByLabel(/Only those who choose it get it/).check();
    await page.getByRole("button", { name: "Create topic" }).click();
    expect(await flash()).toContain("Topic Product news created");
    await expectLabelled();
    const topics = await api("GET", "/v1/topics");
    const topic = topics.body.topics.items.find((t: { name: string }) => t.name === "Product news");
    expect(topic).toMatchObject({ description: "New features, once a month", defaultSubscription: "OPT_IN" });
    topicId = topic.id;
    await page.getByRole("link", { name: "Product news" }).click();
    await page.getByLabel(/Everyone gets it until they leave it/).check();
    await page.getByRole("button", { name: "Save topic" }).click();
    expect(await flash()).toContain("Topic saved");
    expect((await api("GET", `/v1/topics/${topicId}`)).body.topic.defaultSubscription).toBe("OPT_OUT");
    await shot("audiences-topic");
  });

  it("creates a signup form and shows its hosted link and embed snippets; a signup through them joins the group", async () => {
    await page.getByRole("link", { name: "Forms", exact: true }).click();
    await page.getByRole("link", { name: "New form" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Newsletter signup");
    await page.getByLabel("VIPs").check();
    await page.getByLabel("Product news").check();
    await page.getByLabel(/Double opt-in/).uncheck();
    await expectLabelled();
    await page.getByRole("button", { name: "Create form" }).click();
    expect(await flash()).toContain("Form Newsletter signup created");
    const formId = /\/forms\/(frm_[0-9a-z]{26})$/.exec(new URL(page.url()).pathname)![1];
    const link = `${sys.publicUrl.replace(/\/+$/, "")}/f/${formId}`;
    expect(await page.locator("#hosted-link").textContent()).toBe(link);
    const snippet = await page.locator("#snippet-html").textContent();
    expect(snippet).toContain(`<form action="${link}" method="post">`);
    expect(snippet).toContain('name="_hp"');
    expect(snippet).toContain('name="email" type="email" required');
    expect(snippet).toContain('name="firstName"');
    const fetchSnippet = await page.locator("#snippet-fetch").textContent();
    expect(fetchSnippet).toContain(`fetch(${JSON.stringify(link)}`);
    expect(fetchSnippet).toContain('"content-type": "application/json"');
    expect(await page.getByRole("button", { name: "Copy HTML form" }).isVisible()).toBe(true);
    await shot("audiences-form");

    // What the fetch() snippet sends, from another origin: the contact is subscribed and joins the group.
    const res = await fetch(`${sys.gatewayUrl}/f/${formId}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", origin: "https://blog.example" },
      body: JSON.stringify({ email: "fay@example.test", firstName: "Fay", _hp: "" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    await page.goto(url(`/groups/${groupId}`));
    expect(await page.locator("#member-count").textContent()).toBe("4");
  });

  it("creates a broadcast for a group, shows its audience count before scheduling, and sends the audience to the API", async () => {
    await page.getByRole("link", { name: "Broadcasts", exact: true }).click();
    await page.getByRole("link", { name: "New draft" }).click();
    await page.getByLabel("Name (only you see it)").fill("VIP news");
    await page.getByLabel("Subject", { exact: true }).fill("Hello {{firstName}}");
    await page.getByLabel("From name").fill("Acme");
    await page.getByLabel("From address").fill("news@acme.test");
    await page.getByLabel("HTML", { exact: true }).fill("<p>Hi {{firstName}}</p>");
    const count = () => page.locator("#audience-count").textContent();
    // Everyone subscribed: ann, bob, dan, eve, fay.
    await expect.poll(count, { timeout: 10_000 }).toBe("5");
    await page.getByLabel("Contacts in any of these groups").check();
    await page.locator("#audience-picker [data-mode=groups]").getByLabel("VIPs").check();
    // The group's subscribed members: ann, bob, fay (cid unsubscribed).
    await expect.poll(count, { timeout: 10_000 }).toBe("3");
    // Leaving out a segment (pro or VIP: ann, bob, cid, dan, fay) leaves nobody; then put it back.
    await page.getByText("Leave out…").click();
    await page.getByLabel("Contacts in this segment").selectOption(segmentId);
    await expect.poll(count, { timeout: 10_000 }).toBe("0");
    await page.getByLabel("Contacts in this segment").selectOption("");
    await page.getByLabel(/^Topic/).selectOption(topicId);
    await expect.poll(count, { timeout: 10_000 }).toBe("3");
    await expectLabelled();
    await shot("audiences-broadcast-picker");

    await page.getByRole("button", { name: "Save draft" }).click();
    expect(await flash()).toContain("Draft saved");
    const id = /\/broadcasts\/(cmp_[0-9a-z]{26})$/.exec(new URL(page.url()).pathname)![1];
    const b = await api("GET", `/v1/broadcasts/${id}`);
    expect(b.status).toBe(200);
    const broadcast = b.body.broadcast ?? b.body;
    expect(broadcast.audience).toMatchObject({ groups: [groupId], topicId });
    expect(broadcast.audienceCount).toBe(3);
    expect(await page.locator("#schedule-audience").textContent()).toContain("holds 3 contacts now");
    // The saved audience is shown again, picked.
    expect(await page.getByLabel("Contacts in any of these groups").isChecked()).toBe(true);
    await expect.poll(count, { timeout: 10_000 }).toBe("3");
    await shot("audiences-broadcast-draft");
  });

  it("answers another workspace's groups, segments, topics and forms with 404 pages, and refuses its group in a filter", async () => {
    const forms = await api("GET", "/v1/forms");
    const formId = forms.body.forms?.items?.[0]?.id ?? forms.body.items?.[0]?.id;
    expect(formId).toMatch(/^frm_/);
    const other = await browser.newContext({ viewport: { width: 375, height: 800 } });
    const p = await other.newPage();
    await p.goto(url("/sign-in"));
    await p.getByLabel("API key").fill(OTHER_KEY);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.waitForURL((u) => !u.pathname.endsWith("/sign-in"));
    for (const path_ of [`/groups/${groupId}`, `/segments/${segmentId}`, `/segments/${segmentId}/edit`, `/topics/${topicId}`, `/forms/${formId}`]) {
      const res = await p.goto(url(path_));
      expect(res!.status(), path_).toBe(404);
    }
    const count = await p.evaluate(async (u) => {
      const r = await fetch(u, { headers: { accept: "application/json" } });
      return { status: r.status, body: await r.json() };
    }, url(`/segments/count.json?filter=${encodeURIComponent(JSON.stringify({ groups: groupId }))}`));
    expect(count.status).toBe(400);
    expect(count.body.error.code).toBe("invalid_filter");
    expect(count.body.error.message).toContain("unknown group");
    // Its own lists are empty of ours; the builder fits a phone.
    await p.goto(url("/groups"));
    expect(await p.locator("body").textContent()).not.toContain("VIPs");
    await p.goto(url("/segments/new"));
    await p.getByRole("button", { name: "Add condition" }).click();
    // A new row is "Email is …" with no value yet: a row error, no count (the count shown before
    // it was the page's first, of no condition, when it came back after the click: a race). A
    // condition that needs no value counts the workspace's one contact.
    await expect.poll(() => p.locator("#fb-row-error-0").textContent()).toContain("enter a value");
    await p.getByLabel("Operator of condition 1").selectOption({ label: "is set" });
    // The count's error line says why when it stays "—" (a refused or failed count request).
    await expect.poll(async () => `${await p.locator("#fb-count").textContent()} ${await p.locator("#fb-error").textContent()}`.trim(), { timeout: 20_000 }).toBe("1");
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    await p.screenshot({ path: path.join(SHOTS, "audiences-segment-phone.png"), fullPage: true });
    await other.close();
  }, 90_000);

  it("works without JavaScript: the segment's JSON editor saves, and a bad filter comes back with its message", async () => {
    const ctx = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1100, height: 900 } });
    const p = await ctx.newPage();
    await p.goto(url("/sign-in"));
    await p.getByLabel("API key").fill(KEY);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.waitForURL((u) => !u.pathname.endsWith("/sign-in"));
    await p.goto(url("/segments/new"));
    expect(await p.locator("#fb").isVisible()).toBe(false);
    await p.getByLabel("Name", { exact: true }).fill("Free plan");
    await p.getByLabel("Filter (JSON)").fill('{"properties.plan": {"$eq": "free"}, "status": {"$nope": 1}}');
    await p.getByRole("button", { name: "Save segment" }).click();
    expect(await p.getByRole("alert").first().textContent()).toContain('filter.status.$nope: unknown operator "$nope"');
    // What was typed is kept.
    expect(await p.getByLabel("Filter (JSON)").inputValue()).toContain("$nope");
    await p.getByLabel("Filter (JSON)").fill('{"properties.plan": {"$eq": "free"}}');
    await p.getByRole("button", { name: "Save segment" }).click();
    expect(await p.locator("#segment-count").textContent()).toBe("2");
    await ctx.close();
  });

  it("shows a read-only key's session the pages without their forms, and refuses the editors", async () => {
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const p = await ctx.newPage();
    await p.goto(url("/sign-in"));
    await p.getByLabel("API key").fill(READ_KEY);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.waitForURL((u) => !u.pathname.endsWith("/sign-in"));
    await p.goto(url(`/groups/${groupId}`));
    expect(await p.locator("#member-count").textContent()).toBe("4");
    expect(await p.getByRole("button", { name: "Add to group" }).count()).toBe(0);
    expect(await p.getByRole("button", { name: /^Remove/ }).count()).toBe(0);
    await p.goto(url("/topics"));
    expect(await p.getByRole("button", { name: "Create topic" }).count()).toBe(0);
    expect((await p.goto(url("/segments/new")))!.status()).toBe(403);
    expect((await p.goto(url("/forms/new")))!.status()).toBe(403);
    await ctx.close();
  });

  it("deletes a topic, a form and a group after confirming", async () => {
    await page.goto(url(`/topics/${topicId}`));
    await page.getByRole("button", { name: "Delete topic" }).click();
    expect(await flash()).toContain("Topic Product news deleted");
    expect((await api("GET", `/v1/topics/${topicId}`)).status).toBe(404);
    await page.getByRole("link", { name: "Forms", exact: true }).click();
    await page.getByRole("link", { name: "Newsletter signup" }).click();
    await page.getByRole("button", { name: "Delete form" }).click();
    expect(await flash()).toContain("Form Newsletter signup deleted");
    await page.goto(url(`/groups/${groupId}`));
    await page.getByRole("button", { name: "Delete group" }).click();
    expect(await flash()).toContain("Group VIPs deleted (4 contacts left it)");
    expect((await api("GET", `/v1/groups/${groupId}`)).status).toBe(404);
  });
});
