import { memoryTransport } from "@mailroom/kit/connect.js";
import { describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { AppError, badRequest } from "@mailroom/kit/errors.js";
import { DirectoryClient } from "./directory.js";

/** The accounts and audience clients of the adapter, all served by one in-memory transport. */
function clientsOf(transport: Transport) {
  return {
    accounts: createClient(AccountsService, transport),
    templates: createClient(TemplateService, transport),
    contacts: createClient(ContactService, transport),
  };
}

function directory() {
  const calls: string[] = [];
  /** While set, checkSender waits for it, so lookups overlap. */
  let gate: Promise<void> | undefined;
  const transport = memoryTransport(({ service }) => {
    service(AccountsService, {
      async checkSender(req) {
        calls.push(`checkSender ${req.from}`);
        await gate;
        if (req.from === "down@acme.test") throw new ConnectError("accounts restarting", Code.Unavailable);
        if (req.from === "bad") throw badRequest("invalid_from", "not an address", { allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] });
        const allowed = req.from.endsWith("@acme.test");
        return { allowed, address: req.from, name: "", allowedEmails: allowed ? [] : ["a@x.test"], allowedDomains: allowed ? [] : ["x.test"] };
      },
    });
    service(TemplateService, {
      getTemplate(req) {
        if (req.name !== "welcome") throw new ConnectError("no such template", Code.NotFound);
        return { template: { name: "welcome", subject: "Hi", html: "<p>Hi</p>", text: "", previewText: "" } };
      },
    });
    service(ContactService, {
      reserveSendable(req) {
        calls.push(`reserveSendable ${req.recipients.join(",")}`);
        const gone = [...new Set(req.recipients.filter((e) => e.startsWith("gone")))];
        const reserved = BigInt(req.recipients.length - req.recipients.filter((e) => e.startsWith("gone")).length);
        return {
          suppressed: gone.map((email) => ({ email: email.toUpperCase(), reason: SuppressionReason.HARD_BOUNCE, detail: "550" })),
          granted: true,
          reserved,
          used: reserved,
          limit: 10n,
          period: "2030-01",
        };
      },
      upsertContact(req) {
        calls.push(`upsert ${JSON.stringify(req.contact)} ${req.createMissingProperties}`);
        return {};
      },
    });
  });
  const repo = new DirectoryClient(clientsOf(transport), 60_000);
  return { repo, calls, hold: (p: Promise<void> | undefined) => void (gate = p) };
}

describe("directory adapter (accounts and audience)", () => {
  it("remembers allowed senders briefly and never remembers refusals", async () => {
    const { repo, calls } = directory();
    expect((await repo.checkSender("ws", "team@acme.test")).allowed).toBe(true);
    expect((await repo.checkSender("ws", "team@acme.test")).allowed).toBe(true);
    expect((await repo.checkSender("ws2", "team@acme.test")).allowed).toBe(true);
    expect((await repo.checkSender("ws", "eve@evil.test")).allowed).toBe(false);
    expect((await repo.checkSender("ws", "eve@evil.test")).allowed).toBe(false);
    expect(calls).toEqual(["checkSender team@acme.test", "checkSender team@acme.test", "checkSender eve@evil.test", "checkSender eve@evil.test"]);
  });

  it("looks a sender up once for concurrent first sends, refusals included", async () => {
    const { repo, calls, hold } = directory();
    let open!: () => void;
    hold(new Promise<void>((resolve) => (open = resolve)));
    const allowed = Array.from({ length: 5 }, () => repo.checkSender("ws", "team@acme.test"));
    const refused = Array.from({ length: 3 }, () => repo.checkSender("ws", "eve@evil.test"));
    open();
    expect((await Promise.all(allowed)).every((c) => c.allowed)).toBe(true);
    expect((await Promise.all(refused)).some((c) => c.allowed)).toBe(false);
    expect(calls).toEqual(["checkSender team@acme.test", "checkSender eve@evil.test"]);
    hold(undefined);
    await repo.checkSender("ws", "eve@evil.test");
    expect(calls.at(-1)).toBe("checkSender eve@evil.test");
    expect(calls).toHaveLength(3);
  });

  it("turns the accounts unit's 4xx ErrorInfo into the same AppError with the allowed lists", async () => {
    const { repo } = directory();
    const err = await repo.checkSender("ws", "bad").catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "invalid_from", httpStatus: 400, details: { allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] } });
  });

  it("turns an unavailable accounts unit into a 503 AppError, keeping the RPC error as its cause", async () => {
    const { repo } = directory();
    const err = await repo.checkSender("ws", "down@acme.test").catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "service_unavailable", httpStatus: 503 });
    expect(err.cause).toBeInstanceOf(ConnectError);
  });

  it("answers null for a missing template, and lowercases suppressed addresses with their reason", async () => {
    const { repo, calls } = directory();
    expect(await repo.getTemplate("ws", "nope")).toBeNull();
    expect((await repo.getTemplate("ws", "welcome"))?.subject).toBe("Hi");
    const r = await repo.reserveSendable("ws", ["gone@x.test", "here@x.test", "here@x.test"]);
    expect([...r.suppressed.entries()]).toEqual([["gone@x.test", "hard bounce: 550"]]);
    expect(r).toMatchObject({ granted: true, reserved: 2, period: "2030-01", used: 2, limit: 10 });
    expect(calls).toEqual(["reserveSendable gone@x.test,here@x.test,here@x.test"]);
  });

  it("upserts contacts with firstName/lastName as fields and the rest as custom properties", async () => {
    const { repo, calls } = directory();
    await repo.upsertContact("ws", "ann@x.test", { firstName: "Ann", plan: "pro", seats: 3 });
    expect(calls.at(-1)).toContain('"firstName":"Ann"');
    expect(calls.at(-1)).toContain('"properties":{"plan":"pro","seats":3}');
    expect(calls.at(-1)).toMatch(/ true$/);
  });
});

describe("directory adapter: reservations of concurrent requests", () => {
  /** An audience unit whose ReserveSendable grants `limit` sends a month; each call waits for `release`. */
  function limited(limit: number) {
    const calls: string[][] = [];
    let used = 0;
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const transport = memoryTransport(({ service }) => {
      service(ContactService, {
        async reserveSendable(req) {
          calls.push(req.recipients);
          await gate;
          const gone = req.recipients.filter((e) => e.startsWith("gone"));
          const count = req.recipients.length - gone.length;
          const granted = used + count <= limit;
          if (granted) used += count;
          return {
            suppressed: [...new Set(gone)].map((email) => ({ email, reason: SuppressionReason.UNSUBSCRIBED, detail: "" })),
            granted,
            reserved: BigInt(granted ? count : 0),
            used: BigInt(used),
            limit: BigInt(limit),
            period: "2030-01",
          };
        },
      });
    });
    const repo = new DirectoryClient(clientsOf(transport), 0);
    return {
      repo,
      calls,
      used: () => used,
      open: () => {
        release();
        gate = Promise.resolve();
      },
    };
  }

  it("reserves the requests that arrive during a call together in the next one, each with its own count", async () => {
    const dir = limited(100);
    const first = dir.repo.reserveSendable("ws", ["a@x.test"]);
    const otherWorkspace = dir.repo.reserveSendable("ws2", ["e@x.test"]);
    await new Promise((r) => setTimeout(r, 0)); // both first calls are in flight
    const second = dir.repo.reserveSendable("ws", ["b@x.test", "gone@x.test"]);
    const third = dir.repo.reserveSendable("ws", ["c@x.test", "d@x.test"]);
    dir.open();
    const [r1, r2, r3, r4] = await Promise.all([first, second, third, otherWorkspace]);
    // The first went alone; the two that waited went as one; the other workspace never joins.
    expect(dir.calls).toEqual([["a@x.test"], ["e@x.test"], ["b@x.test", "gone@x.test", "c@x.test", "d@x.test"]]);
    expect([r1.reserved, r2.reserved, r3.reserved, r4.reserved]).toEqual([1, 1, 2, 1]);
    expect(r2.suppressed.get("gone@x.test")).toBe("unsubscribed");
    expect(r3.granted && r3.period).toBe("2030-01");
    expect(dir.used()).toBe(5);
  });

  it("asks again one by one when the sum is refused, so a request that fits alone is still granted", async () => {
    const dir = limited(3);
    const first = dir.repo.reserveSendable("ws", ["a@x.test"]);
    await new Promise((r) => setTimeout(r, 0));
    const big = dir.repo.reserveSendable("ws", ["b@x.test", "c@x.test", "d@x.test"]);
    const small = dir.repo.reserveSendable("ws", ["e@x.test"]);
    dir.open();
    const [r1, rBig, rSmall] = await Promise.all([first, big, small]);
    expect(r1.granted).toBe(true);
    expect(rBig.granted).toBe(false);
    expect(rBig.reserved).toBe(0);
    expect(rSmall.granted).toBe(true);
    expect(rSmall.reserved).toBe(1);
    expect(dir.used()).toBe(2);
  });
});
