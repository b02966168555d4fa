import { appErrorFromInfo, errorInfoOf } from "@mailroom/kit/errors.js";

/**
 * A neighbour's refusal (ErrorInfo with a 4xx status) becomes the domain's AppError with
 * the same code and details; anything else (unavailable, internal) passes unchanged.
 */
export function asDomainError(err: unknown): unknown {
  const info = errorInfoOf(err);
  if (info && info.httpStatus >= 400 && info.httpStatus < 500) {
    return appErrorFromInfo(info);
  }
  return err;
}
