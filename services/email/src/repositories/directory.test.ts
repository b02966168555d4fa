import { describe, expect, it } from "vitest";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { DirectoryService, SuppressionReason } from "../../../../gen/mailroom/directory/v1/directory_pb.js";
import { badRequest } from "../../../kit/src/errors.js";
import { EmailError } from "../domain/model.js";
import { RpcDirectoryRepository } from "./directory.js";

function directory() {
  const calls: string[] = [];
  const transport = createRouterTransport(({ service }) => {
    service(DirectoryService, {
      checkSender(req) {
        calls.push(`checkSender ${req.from}`);
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
  return { repo: new RpcDirectoryRepository(createClient(DirectoryService, transport), 60_000), calls };
}

describe("directory repository", () => {
  it("remembers allowed senders briefly and never remembers refusals", async () => {
    const { repo, calls } = directory();
    expect((await repo.checkSender("ws", "team@acme.test")).allowed).toBe(true);
    expect((await repo.checkSender("ws", "team@acme.test")).allowed).toBe(true);
    expect((await repo.checkSender("ws2", "team@acme.test")).allowed).toBe(true);
    expect((await repo.checkSender("ws", "eve@evil.test")).allowed).toBe(false);
    expect((await repo.checkSender("ws", "eve@evil.test")).allowed).toBe(false);
    expect(calls).toEqual(["checkSender team@acme.test", "checkSender team@acme.test", "checkSender eve@evil.test", "checkSender eve@evil.test"]);
  });

  it("turns the directory's 4xx ErrorInfo into the domain's EmailError with the allowed lists", async () => {
    const { repo } = directory();
    const err = await repo.checkSender("ws", "bad").catch((e) => e);
    expect(err).toBeInstanceOf(EmailError);
    expect(err).toMatchObject({ code: "invalid_from", httpStatus: 400, details: { allowedEmails: ["a@x.test"], allowedDomains: ["x.test"] } });
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
