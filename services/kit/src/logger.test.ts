import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, redactUrl } from "./logger.js";
import { runWithRequestContext } from "./request-context.js";

describe("logger", () => {
  it("redacts secrets at the top level and in nested objects", () => {
    const out: string[] = [];
    const stream = new Writable({ write(chunk, _enc, cb) { out.push(String(chunk)); cb(); } });
    const logger = createLogger("test", "info", stream);
    logger.info(
      { apiKey: "mr_live_top", req: { headers: { authorization: "Bearer mr_live_hdr" } }, smtp: { auth: { pass: "hunter2" } }, dkim: { privateKeyPem: "-----BEGIN" } },
      "hello",
    );
    const text = out.join("");
    for (const secret of ["mr_live_top", "mr_live_hdr", "hunter2", "-----BEGIN"]) expect(text).not.toContain(secret);
    expect(text).toContain("[redacted]");
    expect(text).toContain("hello");
  });

  it("adds the current request id to every line written inside a request context", async () => {
    const out: string[] = [];
    const stream = new Writable({ write(chunk, _enc, cb) { out.push(String(chunk)); cb(); } });
    const logger = createLogger("test", "info", stream);
    logger.info("outside");
    await runWithRequestContext("trace-1", async () => {
      await Promise.resolve();
      logger.info({ emailId: "trs_1" }, "inside");
      logger.child({ lane: "transactional" }).info("child");
      logger.info({ requestId: "explicit" }, "own id");
    });
    runWithRequestContext("", () => logger.info("empty id: no context"));
    const lines = out.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.msg, l.requestId])).toEqual([
      ["outside", undefined],
      ["inside", "trace-1"],
      ["child", "trace-1"],
      ["own id", "explicit"],
      ["empty id: no context", undefined],
    ]);
    expect(lines[1].emailId).toBe("trs_1");
  });

  it("strips user names, passwords and query values from URLs", () => {
    const shown = redactUrl("smtp://user:s3cret@relay.test:587/?token=abc");
    expect(shown).not.toContain("s3cret");
    expect(shown).not.toContain("user");
    expect(shown).not.toContain("abc");
    expect(shown).toContain("relay.test:587");
    expect(redactUrl("not a url")).toBe("[unparseable url]");
  });
});
