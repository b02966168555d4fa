import { memoryTransport } from "../../../kit/src/connect.js";
import { describe, expect, it } from "vitest";
import { Code, ConnectError, createClient} from "@connectrpc/connect";
import { DirectoryService, SuppressionReason } from "../../../../gen/mailroom/directory/v1/directory_pb.js";
import { AppError, badRequest } from "../../../kit/src/errors.js";
import { ConnectDirectory } from "./directory.js";

function directory() {
  const calls: string[] = [];
  /** While set, checkSender waits for it, so lookups overlap. */
  let gate: Promise<void> | undefined;
  const transport = memoryTransport(({ service }) => {
    service(DirectoryService, {
      async checkSender(req) {
        calls.push(`checkSender ${req.from}`);
        await gate;
        if (req.from === "down@acme.test") throw new ConnectError("directory restarting", Code.Unavailable);
        if (req.from === "bad") throw badRequest("invalid_from", "not an address", { allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] });
        const allowed = req.from.endsWith("@acme.test");
        return { allowed, address: req.from, name: "", allowedEmails: allowed ? [] : ["a@x.test"], allowedDomains: allowed ? [] : ["x.test"] };
      },
      getTemplate(req) {
        if (req.name !== "welcome") throw new ConnectError("no such template", Code.NotFound);
        return { template: { name: "welcome", subject: "Hi", html: "<p>Hi</p>", text: "", previewText: "" } };
      },
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
  const repo = new ConnectDirectory(createClient(DirectoryService, transport), 60_000);
  return { repo, calls, hold: (p: Promise<void> | undefined) => void (gate = p) };
}

describe("directory adapter", () => {
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

  it("turns the directory's 4xx ErrorInfo into the same AppError with the allowed lists", async () => {
    const { repo } = directory();
    const err = await repo.checkSender("ws", "bad").catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "invalid_from", httpStatus: 400, details: { allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] } });
  });

  it("turns an unavailable directory into a 503 AppError, keeping the RPC error as its cause", async () => {
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
