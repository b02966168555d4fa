import { errorInfoOf } from "../../../kit/src/errors.js";
import { EmailError } from "../domain/model.js";

/**
 * A neighbour's refusal (ErrorInfo with a 4xx status) becomes the domain's EmailError, so
 * it fails only the item it concerns; anything else (unavailable, internal) is rethrown.
 */
export function asDomainError(err: unknown): unknown {
  const info = errorInfoOf(err);
  if (info && info.httpStatus >= 400 && info.httpStatus < 500) {
    return new EmailError(info.code, info.httpStatus, info.message, {
      allowedEmails: info.allowedEmails.length ? info.allowedEmails : undefined,
      allowedDomains: info.allowedDomains.length ? info.allowedDomains : undefined,
      extra: Object.keys(info.extra).length ? { ...info.extra } : undefined,
    });
  }
  return err;
}
