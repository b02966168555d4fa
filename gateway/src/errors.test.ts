import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { bodyFromError } from "./errors.js";

describe("bodyFromError", () => {
  it("answers 503 service_unavailable when a service's connection is reset mid-call (it was killed), not 500", () => {
    // What connect-node makes of ECONNRESET / a destroyed stream.
    const reset = new ConnectError("socket hang up", Code.Aborted);
    expect(bodyFromError(reset)).toMatchObject({ statusCode: 503, code: "service_unavailable" });
    expect(bodyFromError(new ConnectError("connect ECONNREFUSED", Code.Unavailable))).toMatchObject({ statusCode: 503 });
  });

  it("answers 503 when the call was written to a socket whose process had died (EPIPE, which connect-node calls Internal)", () => {
    const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE", syscall: "write" });
    const err = new ConnectError("write EPIPE", Code.Internal, undefined, undefined, epipe);
    expect(bodyFromError(err)).toMatchObject({ statusCode: 503, code: "service_unavailable" });
  });

  it("keeps 500 for an error nobody expected", () => {
    expect(bodyFromError(new ConnectError("boom", Code.Internal))).toMatchObject({ statusCode: 500, code: "internal" });
    expect(bodyFromError(new Error("boom"))).toMatchObject({ statusCode: 500, code: "internal" });
  });
});
