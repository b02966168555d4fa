import { execFileSync } from "node:child_process";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { scoreOfStatus, SpamAssassinCli, spamScorerFor, SpamdScorer } from "./spam-scorer.js";

const message = new TextEncoder().encode(
  "From: Ann <ann@example.test>\r\nTo: support@acme.test\r\nSubject: Invoice question\r\nMessage-ID: <q1@example.test>\r\nDate: Sun, 29 Nov 2026 12:00:00 +0000\r\n\r\nIs the invoice right?\r\n",
);

function spamassassinOnPath(): string | undefined {
  try {
    return execFileSync("sh", ["-c", "command -v spamassassin"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A spamd stand-in speaking SPAMC/1.5 on loopback: records the request, answers `answer`. */
async function fakeSpamd(answer: string) {
  const requests: string[] = [];
  const server = net.createServer((socket) => {
    const chunks: Buffer[] = [];
    socket.on("data", (c) => chunks.push(c));
    socket.on("end", () => {
      requests.push(Buffer.concat(chunks).toString("utf8"));
      socket.end(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as AddressInfo).port, requests, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe("spam scoring of received mail", () => {
  it("reads the score of X-Spam-Status", () => {
    expect(scoreOfStatus("X-Spam-Status: No, score=-0.3 required=5.0 tests=NO_RECEIVED")).toBe(-0.3);
    expect(scoreOfStatus("Subject: x")).toBeUndefined();
  });

  it("picks spamd when configured, spamassassin on the PATH otherwise, and nothing when turned off or absent", () => {
    expect(spamScorerFor({ spamdUrl: "tcp://127.0.0.1:783", maxBytes: 1000 }, { PATH: "/nonexistent" })).toBeInstanceOf(SpamdScorer);
    expect(spamScorerFor({ maxBytes: 1000 }, { PATH: "/nonexistent" })).toBeUndefined();
    expect(spamScorerFor({ spamdUrl: "tcp://127.0.0.1:783", maxBytes: 0 })).toBeUndefined();
  });

  it("asks spamd with CHECK and reads the Spam line; a message over the limit is not sent", async () => {
    const spamd = await fakeSpamd("SPAMD/1.1 0 EX_OK\r\nSpam: True ; 7.1 / 5.0\r\n\r\n");
    try {
      const scorer = new SpamdScorer(`tcp://127.0.0.1:${spamd.port}`, 10_000);
      expect(await scorer.score(message)).toBe(7.1);
      expect(spamd.requests[0]).toMatch(new RegExp(`^CHECK SPAMC/1.5\\r\\nContent-length: ${message.byteLength}\\r\\n`));
      expect(spamd.requests[0].endsWith("Is the invoice right?\r\n")).toBe(true);
      expect(await new SpamdScorer(`tcp://127.0.0.1:${spamd.port}`, 10).score(message)).toBeUndefined();
      expect(spamd.requests).toHaveLength(1);
    } finally {
      await spamd.close();
    }
    const broken = await fakeSpamd("SPAMD/1.1 76 Bad header line\r\n\r\n");
    try {
      await expect(new SpamdScorer(`127.0.0.1:${broken.port}`, 10_000).score(message)).rejects.toThrow(/spamd answered 76/);
    } finally {
      await broken.close();
    }
  });

  const program = spamassassinOnPath();
  it.skipIf(!program)("scores with the spamassassin program on the PATH (local tests)", async () => {
    const score = await new SpamAssassinCli(program!, 512 * 1024).score(message);
    expect(typeof score).toBe("number");
    expect(score).toBeLessThan(5);
  }, 60_000);
});
