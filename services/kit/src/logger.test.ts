import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, redactUrl } from "./logger.js";

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

  it("strips passwords and query values from URLs", () => {
    const shown = redactUrl("smtp://user:s3cret@relay.test:587/?token=abc");
    expect(shown).not.toContain("s3cret");
    expect(shown).not.toContain("abc");
    expect(shown).toContain("relay.test:587");
    expect(redactUrl("not a url")).toBe("[unparseable url]");
  });
});
