import { Writable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { createLogger } from "@mailroom/kit/logger.js";
import { lazyRequestLogger } from "./request-logger.js";

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split("\n").filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: createLogger("gateway", "info", stream) };
}

describe("the lazy request logger", () => {
  it("makes no child for a request that logs nothing or only below the level", () => {
    const { lines, logger } = capture();
    const child = vi.spyOn(logger, "child");
    const log = lazyRequestLogger(logger, { reqId: "r1" }, {});
    log.debug({ status: 200 }, "request done");
    log.trace("nothing");
    expect(child).not.toHaveBeenCalled();
    expect(lines).toEqual([]);
    expect(log.level).toBe("info");
  });

  it("writes what the child would: its bindings, redaction, nested children", () => {
    const { lines, logger } = capture();
    const child = vi.spyOn(logger, "child");
    const log = lazyRequestLogger(logger, { reqId: "r2" }, {});
    log.warn({ apiKey: "mr_secret_value", workspaceId: "ws_a" }, "rate limit buckets unavailable");
    log.error({ err: new Error("boom") }, "failed");
    expect(child).toHaveBeenCalledTimes(1);
    log.child({ part: "upload" }).info("nested");
    expect(lines.map((l) => [l.msg, l.reqId])).toEqual([
      ["rate limit buckets unavailable", "r2"],
      ["failed", "r2"],
      ["nested", "r2"],
    ]);
    expect(lines[0]).toMatchObject({ apiKey: "[redacted]", workspaceId: "ws_a", level: 40 });
    expect(lines[2]).toMatchObject({ part: "upload" });
  });

  it("a route's own level makes the child at once", () => {
    const { lines, logger } = capture();
    const log = lazyRequestLogger(logger, { reqId: "r3" }, { level: "debug" });
    log.debug("visible at the route's level");
    expect(lines.map((l) => l.msg)).toEqual(["visible at the route's level"]);
  });
});
