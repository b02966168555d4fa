import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ErrorInfoSchema, type ErrorInfo } from "@mailroom/proto/common/v1/common_pb.js";

export interface AppErrorInit {
  code: string;
  httpStatus: number;
  message: string;
  allowedEmails?: string[];
  allowedDomains?: string[];
  unknownVariables?: string[];
  /** More body fields; values are JSON-encoded on the wire. */
  extra?: Record<string, string>;
}

/**
 * The one error type domain code throws: a code, the HTTP status the public API answers
 * with, and details. It knows nothing of Connect; the server interceptor
 * (`appErrorInterceptor` in connect.ts) turns it into a ConnectError with an ErrorInfo
 * detail, and the gateway's error handler alone turns that into the public body.
 */
export class AppError extends Error {
  readonly code: string;
  readonly httpStatus: number;
  readonly details: Omit<AppErrorInit, "code" | "httpStatus" | "message">;
  constructor(init: AppErrorInit) {
    super(init.message);
    this.name = "AppError";
    this.code = init.code;
    this.httpStatus = init.httpStatus;
    const { code: _c, httpStatus: _s, message: _m, ...details } = init;
    this.details = details;
  }
  toInit(): AppErrorInit {
    return { code: this.code, httpStatus: this.httpStatus, message: this.message, ...this.details };
  }
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

/** A domain error. Throw it from domain code; see AppError. */
export function appError(init: AppErrorInit): AppError {
  return new AppError(init);
}

/** The ConnectError an AppError crosses RPC as (used by the server interceptor). */
export function toConnectError(err: AppError): ConnectError {
  return new ConnectError(err.message, connectCodeFor(err.httpStatus), undefined, [
    { desc: ErrorInfoSchema, value: toErrorInfo(err.toInit()) },
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

/** The ErrorInfo carried by an error, if it is one of ours (thrown here or received over RPC). */
export function errorInfoOf(err: unknown): ErrorInfo | undefined {
  if (err instanceof AppError) return toErrorInfo(err.toInit());
  if (!(err instanceof ConnectError)) return undefined;
  return err.findDetails(ErrorInfoSchema)[0];
}

/** A neighbour's ErrorInfo (received over RPC) as the same AppError: code, status, message and lists kept. */
export function appErrorFromInfo(info: ErrorInfo): AppError {
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

export const badRequest = (code: string, message: string, more: Partial<AppErrorInit> = {}) =>
  appError({ code, httpStatus: 400, message, ...more });
export const notFound = (code: string, message: string) => appError({ code, httpStatus: 404, message });
export const conflict = (code: string, message: string) => appError({ code, httpStatus: 409, message });
export const unavailable = (code: string, message: string) => appError({ code, httpStatus: 503, message });

/** Socket-level failures of a call: the process behind the connection died, restarted or never answered. */
const SOCKET_FAILURES = new Set(["ECONNRESET", "EPIPE", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ERR_STREAM_PREMATURE_CLOSE", "ERR_STREAM_DESTROYED"]);

/**
 * Whether an RPC failed because the neighbour was unreachable, died mid-call or was too slow
 * (answered 503 `service_unavailable`), rather than because of a bug. connect-node reports a
 * connection reset as Aborted and a write to a socket whose peer is gone (EPIPE) as Internal,
 * so the cause chain is read too.
 */
export function isNeighbourDown(err: ConnectError): boolean {
  if ([Code.Unavailable, Code.DeadlineExceeded, Code.Canceled, Code.Aborted].includes(err.code)) return true;
  for (let cause: unknown = err.cause, depth = 0; cause && depth < 8; cause = (cause as { cause?: unknown }).cause, depth++) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string" && SOCKET_FAILURES.has(code)) return true;
  }
  return false;
}

/**
 * A call to a neighbour unit: its refusals come back as the same AppError (code, status,
 * message), so the caller answers them as its own; a neighbour that is down or too slow is
 * 503 service_unavailable naming it.
 */
export async function callNeighbour<T>(unit: string, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof ConnectError)) throw err;
    const info = errorInfoOf(err);
    if (info) throw appErrorFromInfo(info);
    if (isNeighbourDown(err)) throw unavailable("service_unavailable", `the ${unit} unit did not answer (${what}); try again`);
    throw err;
  }
}
