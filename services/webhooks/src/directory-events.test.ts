import { describe, expect, it } from "vitest";
import { directoryEventOf } from "./consumers.js";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("the directory's events as webhook bodies", () => {
  it("takes the suppression list's changes (SUPPRESSION_CREATED / SUPPRESSION_DELETED) as they come", () => {
    for (const type of ["SUPPRESSION_CREATED", "SUPPRESSION_DELETED"]) {
      const body = { id: "dev_1", type, createdAt: "2026-11-29T12:00:00.000Z", workspaceId: "ws_a", data: { suppression: { domain: "x.test", reason: "manual", createdAt: "2026-11-29T12:00:00.000Z" } } };
      expect(directoryEventOf(encode(body))).toEqual(body);
    }
  });

  it("drops names it does not know and malformed bodies", () => {
    expect(directoryEventOf(encode({ id: "dev_1", type: "SUPPRESSION_MOVED", createdAt: "2026-11-29T12:00:00.000Z", workspaceId: "ws_a", data: {} }))).toBeUndefined();
    expect(directoryEventOf(new TextEncoder().encode("{"))).toBeUndefined();
  });
});
