import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { AppError, appError, toConnectError } from "@mailroom/kit/errors.js";
import { fromRpcError } from "./rpc-errors.js";

describe("a neighbour's failure at the adapter boundary", () => {
  it("keeps the neighbour's ErrorInfo, 4xx or 5xx, as the same AppError", () => {
    const sent = appError({ code: "template_invalid", httpStatus: 400, message: "bad", unknownVariables: ["x"], extra: { at: "1" } });
    const err = fromRpcError(toConnectError(sent));
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).toInit()).toMatchObject(sent.toInit());
    const down = fromRpcError(toConnectError(appError({ code: "service_unavailable", httpStatus: 503, message: "busy" })));
    expect(down).toMatchObject({ code: "service_unavailable", httpStatus: 503, message: "busy" });
  });

  it("makes an unreachable or slow neighbour a 503 and any other RPC failure a 500, keeping the cause", () => {
    for (const code of [Code.Unavailable, Code.DeadlineExceeded, Code.Canceled]) {
      const rpcErr = new ConnectError("gone", code);
      expect(fromRpcError(rpcErr)).toMatchObject({ code: "service_unavailable", httpStatus: 503, cause: rpcErr });
    }
    expect(fromRpcError(new ConnectError("oops", Code.Internal))).toMatchObject({ code: "internal", httpStatus: 500 });
  });

  it("passes errors that did not come over RPC unchanged", () => {
    const bug = new TypeError("x is undefined");
    expect(fromRpcError(bug)).toBe(bug);
  });
});
