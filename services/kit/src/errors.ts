import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ErrorInfoSchema, type ErrorInfo } from "../../../gen/mailroom/common/v1/common_pb.js";

export interface AppErrorInit {
  code: string;
  httpStatus: number;
  message: string;
  allowedEmails?: string[];
  allowedDomains?: string[];
  unknownVariables?: string[];
  extra?: Record<string, string>;
}

const connectCodeFor = (status: number): Code => {
  if (status === 400 || status === 413 || status === 415) return Code.InvalidArgument;
  if (status === 401) return Code.Unauthenticated;
  if (status === 402 || status === 403) return Code.PermissionDenied;
  if (status === 404) return Code.NotFound;
  if (status === 409) return Code.AlreadyExists;
  if (status === 429) return Code.ResourceExhausted;
  if (status === 503) return Code.Unavailable;
  return Code.Internal;
};

/**
 * A domain error that crosses RPC as a ConnectError with an ErrorInfo detail.
 * Services throw these; the gateway alone turns them into public bodies.
 */
export function appError(init: AppErrorInit): ConnectError {
  return new ConnectError(init.message, connectCodeFor(init.httpStatus), undefined, [
    { desc: ErrorInfoSchema, value: toErrorInfo(init) },
  ]);
}

export function toErrorInfo(init: AppErrorInit): ErrorInfo {
  return create(ErrorInfoSchema, {
    code: init.code,
    httpStatus: init.httpStatus,
    message: init.message,
    allowedEmails: init.allowedEmails ?? [],
    allowedDomains: init.allowedDomains ?? [],
    unknownVariables: init.unknownVariables ?? [],
    extra: init.extra ?? {},
  });
}

/** The ErrorInfo carried by an error, if it is one of ours. */
export function errorInfoOf(err: unknown): ErrorInfo | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(ErrorInfoSchema)[0];
}

export const badRequest = (code: string, message: string, more: Partial<AppErrorInit> = {}) =>
  appError({ code, httpStatus: 400, message, ...more });
export const notFound = (code: string, message: string) => appError({ code, httpStatus: 404, message });
export const conflict = (code: string, message: string) => appError({ code, httpStatus: 409, message });
