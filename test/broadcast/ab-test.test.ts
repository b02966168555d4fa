import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * A/B tests through the public API (DESIGN §9.8), with the gateway and every unit as real
 * processes, nats-server and an SMTP sink: the variants reach disjoint random parts of the
 * audience, exactly round(N × testShare) contacts split evenly (DESIGN §10.5); opens recorded through the tracking pixel of the received messages
 * (real HTTP GETs) pick the winner, which goes to the rest; a user's pick overrides the wait;
 * a cancel during the wait stops the rest. (kill -9 during the wait: ab-crash.test.ts.)
 */

const AUDIENCE = 200;
const SHARE = 0.3;
const person = (ws: string, i: number) => ({ email: `${ws}.${String(i).padStart(3, "0")}@example.test`, firstName: `F${i}`, subscribed: true, properties: {} });
const workspace = (id: string, size = AUDIENCE) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key: `mr_test_${id}_1`, scopes: ["api_user"] }],
  verifiedEmails: [], verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: true },
  monthlyLimit: 100_000, sendingAccountNew: false,
  contacts: Array.from({ length: size }, (_, i) => person(id, i)),
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("A/B tests of broadcasts (real processes)", () => {
  let sys: TestSystem;
  const api = (ws: string, method: string, path: string, body?: unknown) => sys.api(method, path, { key: `mr_test_${ws}_1`, body });

  async function until<T>(what: string, read: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last = await read();
    while (!done(last)) {
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(last).slice(0, 800)}\n${await sys.log("broadcast")}`);
      await sleep(100);
      last = await read();
    }
    return last;
  }

  /** Creates and sends a broadcast whose two variants' subjects carry `tag`; returns its id. */
  async function sendAb(ws: string, tag: string, waitFor: number | string): Promise<string> {
    const created = await api(ws, "POST", "/v1/broadcasts", {
      name: tag,
      subject: `Base {{firstName}} #${tag}`,
      fromEmail: "news@acme.test",
      fromName: "Acme",
      html: `<p>Hi {{firstName}}</p><p><a href="https://acme.test/offer">Offer</a></p>`,
      audience: { all: true },
      abTest: {
        variants: [{ subject: `Alpha {{firstName}} #${tag}` }, { subject: `Beta {{firstName}} #${tag}`, fromName: "Beta Team" }],
        testShare: SHARE,
        metric: "opens",
        waitFor,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.broadcast.id as string;
    const scheduled = await api(ws, "POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    return id;
  }

  const received = (tag: string) => sys.sink!.messages.filter((m) => m.raw.includes(`#${tag}`));
  const variantOf = (raw: string, tag: string) => (raw.includes(`#${tag}`) ? (raw.includes("Alpha F") ? 0 : raw.includes("Beta F") ? 1 : -1) : -1);
  const get = async (ws: string, id: string) => (await api(ws, "GET", `/v1/broadcasts/${id}`)).body.broadcast;
  const waiting = (ws: string, id: string) => until("the broadcast waits for its winner", () => get(ws, id), (b) => b.abTest?.state === "waiting");

  /** The test share: every message of the broadcast received so far, by variant; checks they are disjoint and sized. */
  async function testShareOf(ws: string, id: string, tag: string, audience = AUDIENCE) {
    const b = await waiting(ws, id);
    const recipients = b.abTest.variants.reduce((n: number, v: { recipients: number }) => n + v.recipients, 0);
    const mails = await until("the test share arrives", () => received(tag), (m) => m.length >= recipients, 30_000);
    const byVariant = [0, 1].map((v) => mails.filter((m) => variantOf(m.raw, tag) === v));
    expect(byVariant[0].length + byVariant[1].length).toBe(mails.length);
    expect(byVariant.map((v) => v.length)).toEqual(b.abTest.variants.map((v: { recipients: number }) => v.recipients));
    const to = mails.flatMap((m) => m.to);
    expect(new Set(to).size).toBe(to.length); // disjoint: nobody got two variants
    // Exactly round(N × 0.3) (200: 60; 36: 11), the variants differing by at most one.
    expect(mails.length).toBe(Math.round(audience * SHARE));
    expect(byVariant.map((v) => v.length)).toEqual([Math.ceil(mails.length / 2), Math.floor(mails.length / 2)]);
    if (audience === AUDIENCE) {
      // Random, not the first contacts by id: the test share spans the audience.
      const indexes = to.map((a) => Number(a.split(".")[1].split("@")[0])).sort((x, y) => x - y);
      expect(indexes[0]).toBeLessThan(AUDIENCE / 4);
      expect(indexes.at(-1)!).toBeGreaterThan((AUDIENCE * 3) / 4);
    }
    expect(byVariant[1].every((m) => /^From: "?Beta Team"? <news@acme\.test>/im.test(m.raw))).toBe(true);
    return { b, byVariant, to: new Set(to) };
  }

  /** Every contact got exactly one message of the broadcast; the rest all got `winner`. */
  async function restGot(ws: string, tag: string, testTo: Set<string>, winner: number) {
    const all = await until("every contact has the broadcast", () => received(tag), (m) => m.length >= AUDIENCE, 60_000);
    await sleep(1_000); // anything more would show now
    const final = received(tag);
    const to = final.flatMap((m) => m.to);
    expect(to.length).toBe(AUDIENCE);
    expect(new Set(to).size).toBe(AUDIENCE);
    const rest = final.filter((m) => !m.to.some((a) => testTo.has(a)));
    expect(rest.length).toBe(AUDIENCE - testTo.size);
    expect(rest.every((m) => variantOf(m.raw, tag) === winner)).toBe(true);
    return all;
  }

  beforeAll(async () => {
    sys = await useSystem({
      bootstrap: { workspaces: [workspace("ws_abmetric"), workspace("ws_abuser"), workspace("ws_abcancel"), workspace("ws_absmall", 36)] },
      units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"],
      // Waits of seconds, not minutes (the shortest accepted otherwise is 300 s).
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("the variants reach disjoint random parts of the test share; pixel opens pick the winner, which goes to the rest", async () => {
    const ws = "ws_abmetric";
    const tag = "abmetric";
    const id = await sendAb(ws, tag, 20);
    const { b, byVariant, to } = await testShareOf(ws, id, tag);
    expect(b.status).toBe("IN_PROGRESS");
    expect(b.abTest.winner).toBeNull();
    expect(b.progress.recipients).toBe(AUDIENCE);
    expect(b.progress.released).toBe(to.size);

    // Opens, through the pixel of the received messages: 4 of Beta's, 1 of Alpha's (twice: counted once).
    const pixelOf = async (raw: string) => {
      const html = (await PostalMime.parse(raw)).html!;
      const url = new RegExp(`${sys.publicUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/t/o/[^'")\\s]+`).exec(html)?.[0];
      expect(url, "an open pixel in the message").toBeDefined();
      return url!;
    };
    const opens = [...byVariant[1].slice(0, 4), byVariant[0][0], byVariant[0][0]];
    for (const m of opens) {
      const res = await fetch(await pixelOf(m.raw));
      expect(res.status).toBe(200);
    }
    const counted = await until("the opens are counted per variant", () => get(ws, id), (x) => x.abTest.variants[1].uniqueOpens === 4 && x.abTest.variants[0].uniqueOpens === 1, 15_000);
    expect(counted.abTest.state).toBe("waiting"); // the opens came inside the wait
    expect(counted.abTest.variants[1].openRate).toBeGreaterThan(counted.abTest.variants[0].openRate);

    await restGot(ws, tag, to, 1);
    const done = await until("COMPLETED", () => get(ws, id), (x) => x.status === "COMPLETED", 60_000);
    expect(done.abTest).toMatchObject({ state: "decided", winner: 1, winnerChosenBy: "metric" });
    expect(done.abTest.variants[1]).toMatchObject({ recipients: byVariant[1].length, delivered: byVariant[1].length, uniqueOpens: 4 });
    expect(done.abTest.variants[0]).toMatchObject({ recipients: byVariant[0].length, uniqueOpens: 1 });
    expect(done.progress).toMatchObject({ recipients: AUDIENCE, sent: AUDIENCE, delivered: AUDIENCE });
    // A second pick after the decision: 409.
    expect((await api(ws, "POST", `/v1/broadcasts/${id}/ab/winner`, { variant: 0 })).body).toMatchObject({ statusCode: 409, code: "ab_winner_already_chosen" });
  }, 180_000);

  it("a user's pick during the wait goes to the rest at once", async () => {
    const ws = "ws_abuser";
    const tag = "abuser";
    const id = await sendAb(ws, tag, 600);
    const { to } = await testShareOf(ws, id, tag);
    expect((await api(ws, "POST", `/v1/broadcasts/${id}/ab/winner`, { variant: 7 })).body.code).toBe("invalid_payload");
    const chosen = await api(ws, "POST", `/v1/broadcasts/${id}/ab/winner`, { variant: 0 });
    expect(chosen.status, JSON.stringify(chosen.body)).toBe(200);
    expect(chosen.body.broadcast.abTest).toMatchObject({ winner: 0, winnerChosenBy: "user", state: "decided" });
    expect((await api(ws, "POST", `/v1/broadcasts/${id}/ab/winner`, { variant: 1 })).body).toMatchObject({ statusCode: 409, code: "ab_winner_already_chosen" });
    // Long before the 10 minutes of the wait.
    await restGot(ws, tag, to, 0);
    expect((await until("COMPLETED", () => get(ws, id), (x) => x.status === "COMPLETED")).abTest.winnerChosenBy).toBe("user");
  }, 180_000);

  it("36 contacts at 0.3: exactly 11 in the test, 6 and 5; waitFor given as an ISO 8601 duration", async () => {
    const ws = "ws_absmall";
    const tag = "absmall";
    const id = await sendAb(ws, tag, "PT10M");
    const { b, to } = await testShareOf(ws, id, tag, 36);
    expect(to.size).toBe(11);
    expect(b.abTest.variants.map((v: { recipients: number }) => v.recipients)).toEqual([6, 5]);
    expect(b.abTest.waitFor).toBe(600);
    expect(Date.parse(b.abTest.waitUntil) - Date.now()).toBeGreaterThan(500_000);
    // A malformed duration is refused, naming the field.
    const refused = await api(ws, "POST", "/v1/broadcasts", { name: "x", subject: "s", fromEmail: "news@acme.test", fromName: "Acme", html: "<p>x</p>", audience: { all: true }, abTest: { variants: [{ subject: "a" }, { subject: "b" }], testShare: SHARE, metric: "opens", waitFor: "PT10" } });
    expect(refused.body).toMatchObject({ statusCode: 400, code: "invalid_payload", message: expect.stringMatching(/^abTest\.waitFor .*ISO 8601/) });
    expect((await api(ws, "POST", `/v1/broadcasts/${id}/cancel`, {})).status).toBe(200);
  }, 120_000);

  it("a cancel during the wait stops the rest; the broadcast completes on the test share", async () => {
    const ws = "ws_abcancel";
    const tag = "abcancel";
    const id = await sendAb(ws, tag, 12);
    const { to } = await testShareOf(ws, id, tag);
    const cancelled = await api(ws, "POST", `/v1/broadcasts/${id}/cancel`, {});
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.broadcast).toMatchObject({ status: "IN_PROGRESS", pauseReason: "ab_test_cancelled", abTest: { state: "cancelled", winner: null } });
    expect((await api(ws, "POST", `/v1/broadcasts/${id}/ab/winner`, { variant: 0 })).body.code).toBe("ab_test_not_waiting");
    const done = await until("COMPLETED", () => get(ws, id), (x) => x.status === "COMPLETED", 60_000);
    expect(done.progress).toMatchObject({ recipients: AUDIENCE, released: to.size, sent: to.size });
    // Past the end the wait would have had: nobody else got it.
    await sleep(Math.max(0, Date.parse(cancelled.body.broadcast.abTest.waitUntil) + 3_000 - Date.now()));
    expect(received(tag).length).toBe(to.size);
  }, 180_000);
});
