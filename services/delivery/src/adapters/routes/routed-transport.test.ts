import { describe, expect, it } from "vitest";
import { SmtpFailure, type Lane, type MailTransport, type OutgoingMail, type SendResult } from "../../domain/ports.js";
import { RoutedTransport, type Route } from "./routed-transport.js";

type Reply = "ok" | SmtpFailure;

/** A route's transport answering from a function; records what it was handed. */
class FakeTransport implements MailTransport {
  readonly capturing = false;
  readonly got: OutgoingMail[] = [];
  answer: (mail: OutgoingMail) => Reply = () => "ok";
  constructor(readonly description: string) {}
  async send(mail: OutgoingMail): Promise<SendResult> {
    this.got.push(mail);
    const a = this.answer(mail);
    if (a !== "ok") throw a;
    return { code: 250, response: `250 ok from ${this.description}` };
  }
  async close(): Promise<void> {}
}

const refused = () => new SmtpFailure("connect ECONNREFUSED", 0, false, true);
const greeting421 = () => new SmtpFailure("greeting: 421 too busy", 421, false, true);
const rcpt450 = () => new SmtpFailure("RCPT TO: 450 mailbox busy", 450, true, true);
const rcpt550 = () => new SmtpFailure("RCPT TO: 550 no such user", 550, true, true);
const cutAfterData = () => new SmtpFailure("connection closed", 0, false, false);

let seq = 0;
function mail(over: { lane?: Lane; workspaceId?: string } = {}): OutgoingMail {
  seq += 1;
  return {
    envelope: { from: "bounces@acme.test", to: `u${seq}@example.test` },
    from: { name: "", address: "news@acme.test" },
    to: `u${seq}@example.test`,
    subject: "Hi",
    html: "<p>Hi</p>",
    text: "Hi",
    messageId: `<m${seq}@acme.test>`,
    headers: [{ key: "X-Mailroom-Delivery", value: `dlv_${seq}` }],
    meta: { deliveryId: `dlv_${seq}`, workspaceId: over.workspaceId ?? "ws_a" },
    lane: over.lane ?? "transactional",
  };
}

function setup(specs: Array<Partial<Omit<Route, "transport">> & { name: string }>, opts: { downAfter?: number; random?: () => number } = {}) {
  let now = 1_000_000;
  const fakes = new Map<string, FakeTransport>();
  const routes: Route[] = specs.map((s) => {
    const t = new FakeTransport(s.name);
    fakes.set(s.name, t);
    return { kind: "relay", target: `smtp://${s.name}.test`, weight: 1, lanes: [], workspaces: [], ...s, transport: t };
  });
  const health: Array<[string, boolean]> = [];
  const routed = new RoutedTransport(routes, {
    downMs: 60_000,
    downMaxMs: 300_000,
    downAfter: opts.downAfter ?? 3,
    now: () => now,
    random: opts.random,
    onHealth: (r, up) => health.push([r, up]),
  });
  return { routed, fake: (n: string) => fakes.get(n)!, health, advance: (ms: number) => (now += ms), down: (n: string) => routed.health().find((h) => h.name === n)!.down };
}

describe("RoutedTransport", () => {
  it("spreads mail by weight among routes that are up and names the route that carried it", async () => {
    const { routed, fake } = setup([{ name: "a", weight: 3 }, { name: "b", weight: 1 }]);
    const carried: string[] = [];
    for (let i = 0; i < 400; i++) carried.push((await routed.send(mail())).route!);
    const a = carried.filter((r) => r === "a").length;
    expect(a).toBeGreaterThan(240);
    expect(a).toBeLessThan(360);
    expect(fake("a").got.length + fake("b").got.length).toBe(400);
  });

  it("moves a mail refused before DATA to the next route at once and leaves the refusing route out", async () => {
    const { routed, fake, health, down } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => refused();
    const result = await routed.send(mail());
    expect(result.route).toBe("b");
    expect(fake("a").got).toHaveLength(1);
    expect(down("a")).toBe(true);
    expect(health).toEqual([["a", false]]);
    // While down, a gets nothing (random 0 would pick it first).
    for (let i = 0; i < 5; i++) expect((await routed.send(mail())).route).toBe("b");
    expect(fake("a").got).toHaveLength(1);
    expect(routed.health().find((h) => h.name === "a")!.lastError).toMatch(/ECONNREFUSED/);
  });

  it("treats a 421 greeting like a refused connection", async () => {
    const { routed, fake, down } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => greeting421();
    expect((await routed.send(mail())).route).toBe("b");
    expect(down("a")).toBe(true);
  });

  it("never retries elsewhere a failure after the body went out", async () => {
    const { routed, fake, down } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => cutAfterData();
    const err = await routed.send(mail()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SmtpFailure);
    expect((err as SmtpFailure).route).toBe("a");
    expect(fake("b").got).toHaveLength(0);
    expect(down("a")).toBe(false);
  });

  it("passes a hard bounce through without moving the mail", async () => {
    const { routed, fake } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => rcpt550();
    const err = (await routed.send(mail()).catch((e: unknown) => e)) as SmtpFailure;
    expect(err.code).toBe(550);
    expect(err.route).toBe("a");
    expect(fake("b").got).toHaveLength(0);
  });

  it("marks down a route that defers everything (N in a row) and brings it back after a probe", async () => {
    const { routed, fake, down, advance, health } = setup([{ name: "a" }, { name: "b" }], { downAfter: 3, random: () => 0 });
    fake("a").answer = () => rcpt450();
    for (let i = 0; i < 3; i++) await expect(routed.send(mail())).rejects.toMatchObject({ code: 450, route: "a" });
    expect(down("a")).toBe(true);
    expect(fake("b").got).toHaveLength(0); // deferred, not moved: the back-off retries them
    expect((await routed.send(mail())).route).toBe("b");

    // Back after 60 s: one probe; while it runs, the others stay on b.
    advance(60_001);
    fake("a").answer = () => "ok";
    expect(down("a")).toBe(false);
    expect((await routed.send(mail())).route).toBe("a");
    expect(health).toEqual([["a", false], ["a", true]]);
  });

  it("doubles the down period while the route stays bad, and counts one outage once", async () => {
    const { routed, fake, advance } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => refused();
    await routed.send(mail());
    const first = routed.health()[0].downUntil!.getTime();
    advance(60_001);
    await routed.send(mail()); // the probe fails
    const second = routed.health()[0].downUntil!.getTime();
    expect(second - first).toBe(60_001 + 120_000 - 60_000);
    expect(fake("a").got).toHaveLength(2);
  });

  it("sends one probe to a route that came back while the others keep going elsewhere", async () => {
    const { routed, fake, advance } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => refused();
    await routed.send(mail());
    advance(60_001);
    let release!: () => void;
    fake("a").answer = () => "ok";
    const slow = fake("a");
    const original = slow.send.bind(slow);
    slow.send = async (m) => {
      await new Promise<void>((r) => (release = r));
      return original(m);
    };
    const probe = routed.send(mail());
    await new Promise((r) => setImmediate(r));
    for (let i = 0; i < 3; i++) expect((await routed.send(mail())).route).toBe("b");
    release();
    expect((await probe).route).toBe("a");
  });

  it("uses a weight-0 route only when every weighted one is down", async () => {
    const { routed, fake } = setup([{ name: "a", weight: 1 }, { name: "spare", weight: 0 }], { random: () => 0.99 });
    for (let i = 0; i < 5; i++) expect((await routed.send(mail())).route).toBe("a");
    fake("a").answer = () => refused();
    expect((await routed.send(mail())).route).toBe("spare");
    fake("a").answer = () => "ok";
    expect((await routed.send(mail())).route).toBe("spare"); // a is still down
  });

  it("when every candidate is down, tries the one back soonest", async () => {
    const { routed, fake, advance } = setup([{ name: "a" }, { name: "b" }], { random: () => 0 });
    fake("a").answer = () => refused();
    fake("b").answer = () => refused();
    await expect(routed.send(mail())).rejects.toMatchObject({ code: 0, route: "b" });
    advance(1_000);
    fake("b").answer = () => "ok";
    // a went down first: it comes back first, is tried, fails; then b.
    expect((await routed.send(mail())).route).toBe("b");
    expect(fake("a").got).toHaveLength(2);
  });

  it("keeps a lane's mail on the routes that carry that lane", async () => {
    const { routed } = setup([{ name: "bulk", lanes: ["broadcast"], weight: 10 }, { name: "trs", lanes: ["transactional"] }, { name: "any", weight: 1 }]);
    for (let i = 0; i < 50; i++) expect((await routed.send(mail({ lane: "transactional" }))).route).not.toBe("bulk");
    for (let i = 0; i < 50; i++) expect((await routed.send(mail({ lane: "broadcast" }))).route).not.toBe("trs");
  });

  it("gives a workspace's mail only its own routes, and other workspaces only the shared ones", async () => {
    const { routed, fake } = setup([{ name: "shared" }, { name: "own", workspaces: ["ws_big"] }]);
    for (let i = 0; i < 20; i++) expect((await routed.send(mail({ workspaceId: "ws_big" }))).route).toBe("own");
    for (let i = 0; i < 20; i++) expect((await routed.send(mail({ workspaceId: "ws_small" }))).route).toBe("shared");
    // Its own route down: the workspace's mail still goes nowhere else.
    fake("own").answer = () => refused();
    await expect(routed.send(mail({ workspaceId: "ws_big" }))).rejects.toMatchObject({ route: "own" });
    expect(fake("shared").got.every((m) => m.meta.workspaceId === "ws_small")).toBe(true);
  });

  it("adds the provider's correlation headers on that route's copy only", async () => {
    const { routed, fake } = setup([{ name: "ses", provider: "ses" }, { name: "plain" }], { random: () => 0 });
    fake("ses").answer = () => refused();
    const m = mail();
    m.meta.deliveryId = "cmp_01abc.ctc_01def";
    const before = JSON.stringify(m);
    expect((await routed.send(m)).route).toBe("plain");
    expect(fake("ses").got[0].headers).toContainEqual({ key: "X-SES-MESSAGE-TAGS", value: "mailroom_delivery_id=cmp_01abc-2Ectc_01def" });
    expect(fake("plain").got[0].headers.some((h) => h.key.startsWith("X-SES"))).toBe(false);
    expect(JSON.stringify(m)).toBe(before);
  });

  it("never marks a direct route down nor moves its mail: its failures are the destinations'", async () => {
    const { routed, fake, down } = setup([{ name: "mx", kind: "direct", weight: 1 }, { name: "spare", weight: 0 }]);
    fake("mx").answer = () => refused();
    for (let i = 0; i < 5; i++) await expect(routed.send(mail())).rejects.toMatchObject({ code: 0, route: "mx" });
    expect(down("mx")).toBe(false);
    expect(fake("spare").got).toHaveLength(0);
  });

  it("refuses a set of routes that leaves a lane without one", () => {
    expect(() => setup([{ name: "bulk", lanes: ["broadcast"] }])).toThrow(/no route carries transactional mail/);
  });
});
