import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { parseRuleTable } from "@mailroom/kit/spamassassin.js";
import { HOW_TO_ENABLE, parseSpamAssassinOutput, SpamAssassinCli, spamScorerFor, SpamdScorer } from "./spam-scorer.js";
import { checkMime } from "./check-mime.js";
import type { CheckMessage } from "../domain/check/ports.js";

const REPORT = `Content analysis details:   (2.8 points, 5.0 required)

 pts rule name              description
---- ---------------------- --------------------------------------------------
-0.0 NO_RECEIVED            Informational: message has no Received headers
 2.8 HTML_IMAGE_ONLY_24     BODY: HTML: images with 2000-2400 bytes of words
 0.1 URI_LONG_DESCRIPTION   A rule whose description goes on
                            across two lines
 0.0 HTML_MESSAGE           BODY: HTML included in message

`;

const message: CheckMessage = {
  from: { email: "news@acme.test", name: "Acme" },
  to: "ann@example.test",
  replyTo: ["help@acme.test"],
  subject: "Autumn at Acme",
  html: "<p>Hi Ann, here is what is new this autumn at Acme: a second warehouse and the winter catalogue.</p>",
  text: "Hi Ann, here is what is new this autumn at Acme: a second warehouse and the winter catalogue.",
  messageId: "<check.cmp_1@acme.test>",
  listUnsubscribeUrl: "https://mail.acme.test/u/TOKEN",
  date: new Date("2026-11-29T10:00:00Z"),
};

function which(program: string): string | undefined {
  try {
    return execFileSync("sh", ["-c", `command -v ${program} || ls /usr/sbin/${program}`], { encoding: "utf8" }).trim().split("\n")[0] || undefined;
  } catch {
    return undefined;
  }
}

describe("spam scoring for the pre-send check", () => {
  it("reads the rule table, descriptions continued on the next line included", () => {
    expect(parseRuleTable(REPORT)).toEqual([
      { name: "NO_RECEIVED", score: 0, description: "Informational: message has no Received headers" },
      { name: "HTML_IMAGE_ONLY_24", score: 2.8, description: "BODY: HTML: images with 2000-2400 bytes of words" },
      { name: "URI_LONG_DESCRIPTION", score: 0.1, description: "A rule whose description goes on across two lines" },
      { name: "HTML_MESSAGE", score: 0, description: "BODY: HTML included in message" },
    ]);
    const out = parseSpamAssassinOutput(`X-Spam-Status: No, score=2.8 required=5.0 tests=HTML_IMAGE_ONLY_24,\n\tHTML_MESSAGE autolearn=no\nSubject: x\n\nbody\n${REPORT}`);
    expect(out).toMatchObject({ scored: true, score: 2.8, required: 5 });
    expect(parseSpamAssassinOutput("no headers")).toMatchObject({ scored: false, failed: true });
  });

  it("says how to enable it when neither spamd nor spamassassin is there", async () => {
    expect(await spamScorerFor(undefined, { PATH: "/nonexistent" }).score(message)).toEqual({ scored: false, skipped: HOW_TO_ENABLE });
    expect(HOW_TO_ENABLE).toMatch(/spamassassin[\s\S]*MAILROOM_SPAMD_URL/);
    expect(spamScorerFor("tcp://127.0.0.1:783", { PATH: "/nonexistent" })).toBeInstanceOf(SpamdScorer);
  });

  it("lays the message out as delivery would: List-Unsubscribe one-click, both parts, the same bytes for the same message", async () => {
    const raw = (await checkMime(message)).toString();
    expect(raw).toMatch(/^List-Unsubscribe: <https:\/\/mail\.acme\.test\/u\/TOKEN>$/m);
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
    expect(raw).toMatch(/^Reply-To: help@acme\.test$/m);
    expect(raw).toMatch(/multipart\/alternative/);
    expect(raw).toBe((await checkMime(message)).toString());
    expect((await checkMime({ ...message, listUnsubscribeUrl: "", text: "" })).toString()).not.toMatch(/List-Unsubscribe|multipart/);
  });

  const spamassassin = which("spamassassin");
  it.skipIf(!spamassassin)("scores with the spamassassin program", async () => {
    const result = await new SpamAssassinCli(spamassassin!).score(message);
    expect(result).toMatchObject({ scored: true, required: 5 });
    if (result.scored) expect(result.rules.map((r) => r.name)).toContain("HTML_MESSAGE");
  }, 60_000);

  it("reports a spamd that does not answer as a failure, not a score", async () => {
    const closed = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as net.AddressInfo;
    const result = await new SpamdScorer(`tcp://127.0.0.1:${port}`).score(message);
    expect(result).toMatchObject({ scored: false, failed: true, skipped: expect.stringContaining(`spamd at 127.0.0.1:${port}`) });
    closed.close();
  });

  const spamd = which("spamd");
  let daemon: ChildProcess | undefined;
  afterAll(() => {
    daemon?.kill();
  });
  it.skipIf(!spamd || !spamassassin)("scores over spamd's protocol as the program does", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    daemon = spawn(spamd!, ["-L", "--listen", `127.0.0.1:${port}`, "--max-children", "1", "-u", "nobody", "-x", "--syslog", "stderr"], { stdio: "ignore" });
    const scorer = new SpamdScorer(`tcp://127.0.0.1:${port}`);
    const deadline = Date.now() + 40_000;
    let result = await scorer.score(message);
    while (!result.scored && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      result = await scorer.score(message);
    }
    const direct = await new SpamAssassinCli(spamassassin!).score(message);
    expect(result).toMatchObject({ scored: true, required: 5 });
    if (result.scored && direct.scored) {
      expect(result.score).toBe(direct.score);
      expect(result.rules.map((r) => r.name).sort()).toEqual(direct.rules.map((r) => r.name).sort());
    }
  }, 60_000);
});
