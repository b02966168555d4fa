import { ConnectError } from "@connectrpc/connect";
import { AppError, appError, appErrorFromInfo, errorInfoOf, isNeighbourDown } from "@mailroom/kit/errors.js";

/**
 * The adapter boundary for a neighbour's failure, so the domain sees only AppError:
 * - an answer carrying ErrorInfo (the neighbour's own AppError) becomes the same AppError,
 *   so a 4xx refusal fails only the item it concerns and keeps its code and allowed lists;
 * - a neighbour that is down or too slow becomes 503 `service_unavailable`, any other RPC
 *   failure 500 `internal` (what the gateway answers for them), the original kept as cause.
 * Errors that did not come over RPC (bugs) pass unchanged.
 */
export function fromRpcError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const info = errorInfoOf(err);
  if (info) {
    return appErrorFromInfo(info);
  }
  if (!(err instanceof ConnectError)) return err;
  const down = isNeighbourDown(err);
  const converted = down
    ? appError({ code: "service_unavailable", httpStatus: 503, message: "A backing service is unavailable; try again shortly." })
    : appError({ code: "internal", httpStatus: 500, message: "Internal error" });
  return Object.assign(converted, { cause: err });
}

/** Runs one RPC, handing the domain an AppError if it fails. */
export async function rpc<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw fromRpcError(err);
  }
}
