import { appError, errorInfoOf } from "../../../kit/src/errors.js";

/**
 * A neighbour's refusal (ErrorInfo with a 4xx status) becomes the domain's AppError with
 * the same code and details; anything else (unavailable, internal) passes unchanged.
 */
export function asDomainError(err: unknown): unknown {
  const info = errorInfoOf(err);
  if (info && info.httpStatus >= 400 && info.httpStatus < 500) {
    return appError({
      code: info.code,
      httpStatus: info.httpStatus,
      message: info.message,
      allowedEmails: info.allowedEmails.length ? info.allowedEmails : undefined,
      allowedDomains: info.allowedDomains.length ? info.allowedDomains : undefined,
      unknownVariables: info.unknownVariables.length ? info.unknownVariables : undefined,
      extra: Object.keys(info.extra).length ? { ...info.extra } : undefined,
    });
  }
  return err;
}
