import { STATUS_CODES } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyReply } from "fastify";
import type { ErrorInfo } from "../../gen/mailroom/common/v1/common_pb.js";
import { errorInfoOf } from "../../services/kit/src/errors.js";

export const DOCS_BASE = "https://mailroom.dev/docs/errors";

interface ErrorRule {
  status: number;
  /** Add `docsUrl` to the body. */
  docs?: boolean;
  /**
   * Hide `code` in the body: the spec's four email error rows have a fixed body shape
   * `{ statusCode, error, message, docsUrl? }` and name no code.
   */
  specShape?: boolean;
}

/** The one table that maps error codes to HTTP statuses and public body rules. */
export const ERROR_TABLE: Record<string, ErrorRule> = {
  // Spec: email endpoints
  invalid_payload: { status: 400, docs: true, specShape: true },
  invalid_from: { status: 400, docs: true, specShape: true },
  unauthorized: { status: 401, specShape: true },
  monthly_limit_reached: { status: 403, specShape: true },
  // Design §6 decisions and obvious additions
  invalid_json: { status: 400 },
  invalid_request: { status: 400, docs: true },
  template_not_found: { status: 400, docs: true },
  send_at_out_of_range: { status: 400, docs: true },
  invalid_send_at: { status: 400, docs: true },
  header_injection: { status: 400, docs: true },
  batch_invalid: { status: 400, docs: true },
  recipient_suppressed: { status: 400 },
  idempotency_key_reused: { status: 409 },
  idempotency_request_in_progress: { status: 409 },
  email_not_found: { status: 404 },
  email_not_cancellable: { status: 409 },
  not_found: { status: 404 },
  unsupported_media_type: { status: 415 },
  payload_too_large: { status: 413 },
  rate_limited: { status: 429 },
  service_unavailable: { status: 503 },
  internal: { status: 500 },
  // Broadcast endpoints (spec)
  broadcast_api_not_enabled: { status: 403 },
  broadcast_api_addon_required: { status: 402 },
  broadcast_api_workspace_not_verified: { status: 403 },
  broadcast_unknown_variables: { status: 400 },
  "campaigns/invalid_from_email": { status: 400, docs: true },
  "campaigns/delivery_method_not_available": { status: 400, docs: true },
  broadcast_html_too_large: { status: 413 },
  broadcast_not_cancellable: { status: 409 },
  broadcast_not_found: { status: 404 },
};

export type PublicErrorBody = {
  statusCode: number;
  error: string;
  message: string;
  code?: string;
  docsUrl?: string;
} & Record<string, unknown>;

export interface PublicErrorInit {
  code: string;
  message: string;
  /** Used when the code is not in the table. */
  status?: number;
  allowedEmails?: string[];
  allowedDomains?: string[];
  unknownVariables?: string[];
  extra?: Record<string, unknown>;
}

export function publicErrorBody(init: PublicErrorInit): PublicErrorBody {
  const rule = ERROR_TABLE[init.code] ?? { status: init.status ?? 400 };
  const body: PublicErrorBody = {
    statusCode: rule.status,
    error: STATUS_CODES[rule.status] ?? "Error",
    message: init.message,
  };
  if (!rule.specShape) body.code = init.code;
  if (init.code === "invalid_from" || init.code === "campaigns/invalid_from_email" || init.allowedEmails?.length || init.allowedDomains?.length) {
    body.allowedEmails = init.allowedEmails ?? [];
    body.allowedDomains = init.allowedDomains ?? [];
  }
  if (init.unknownVariables?.length) body.unknownVariables = init.unknownVariables;
  if (init.extra) Object.assign(body, init.extra);
  if (rule.docs) body.docsUrl = `${DOCS_BASE}#${encodeURIComponent(init.code)}`;
  return body;
}

/** Body for an ErrorInfo that crossed RPC from a service. */
export function bodyFromErrorInfo(info: ErrorInfo): PublicErrorBody {
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info.extra)) {
    try {
      extra[k] = JSON.parse(v);
    } catch {
      extra[k] = v;
    }
  }
  return publicErrorBody({
    code: info.code,
    message: info.message,
    status: info.httpStatus || undefined,
    allowedEmails: info.allowedEmails,
    allowedDomains: info.allowedDomains,
    unknownVariables: info.unknownVariables,
    extra: Object.keys(extra).length ? extra : undefined,
  });
}

/** Maps any error from an RPC call (or our own code) to a public body. */
export function bodyFromError(err: unknown): PublicErrorBody {
  const info = errorInfoOf(err);
  if (info) return bodyFromErrorInfo(info);
  if (err instanceof ConnectError) {
    switch (err.code) {
      case Code.Unavailable:
      case Code.DeadlineExceeded:
      case Code.Canceled:
        return publicErrorBody({ code: "service_unavailable", message: "A backing service is unavailable; try again shortly." });
      case Code.NotFound:
        return publicErrorBody({ code: "not_found", message: err.rawMessage });
      case Code.InvalidArgument:
      case Code.FailedPrecondition:
      case Code.OutOfRange:
        return publicErrorBody({ code: "invalid_request", message: err.rawMessage });
      case Code.AlreadyExists:
        return publicErrorBody({ code: "conflict", status: 409, message: err.rawMessage });
      case Code.Unauthenticated:
      case Code.PermissionDenied:
        return publicErrorBody({ code: "unauthorized", message: "Invalid API key" });
      case Code.ResourceExhausted:
        return publicErrorBody({ code: "rate_limited", message: err.rawMessage });
    }
  }
  return publicErrorBody({ code: "internal", message: "Internal error" });
}

export function sendError(reply: FastifyReply, body: PublicErrorBody): FastifyReply {
  return reply.code(body.statusCode).type("application/json").send(body);
}

export function replyWithError(reply: FastifyReply, err: unknown): FastifyReply {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) reply.log.error({ err }, "request failed");
  return sendError(reply, body);
}
