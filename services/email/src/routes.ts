import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  BatchFailureSchema,
  EmailRecordSchema,
  EmailService as EmailServiceDesc,
  EmailStatus as ProtoStatus,
  type EmailInput,
  type EmailRecord as ProtoRecord,
} from "../../../gen/mailroom/email/v1/email_pb.js";
import { CompiledMessageSchema } from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { appError, toErrorInfo, type AppErrorInit } from "../../kit/src/errors.js";
import { EmailError, type EmailRecord, type EmailRequest, type EmailStatus } from "./domain/model.js";
import { assertBatchSize, type EmailService } from "./domain/service.js";

const STATUS: Record<EmailStatus, ProtoStatus> = {
  SCHEDULED: ProtoStatus.SCHEDULED,
  SENT: ProtoStatus.SENT,
  DELIVERED: ProtoStatus.DELIVERED,
  FAILED: ProtoStatus.FAILED,
  CANCELLED: ProtoStatus.CANCELLED,
};

const orUndefined = (s: string) => (s === "" ? undefined : s);

/** Proto in -> domain request. */
export function requestOf(input: EmailInput | undefined): EmailRequest {
  if (!input) throw new EmailError("invalid_payload", 400, "email is required");
  const base = {
    to: input.to,
    settings: { trackClicks: input.settings?.trackClicks, trackOpens: input.settings?.trackOpens },
    groupBy: orUndefined(input.groupBy),
    sendAt: input.sendAt ? timestampDate(input.sendAt) : undefined,
    idempotencyKey: orUndefined(input.idempotencyKey),
    payloadHash: orUndefined(input.payloadHash),
  };
  const content = input.content;
  if (content.case === "raw") {
    const raw = content.value;
    return {
      ...base,
      content: {
        kind: "raw",
        from: raw.from,
        fromName: orUndefined(raw.fromName),
        subject: raw.subject,
        html: raw.html,
        text: orUndefined(raw.text),
        previewText: orUndefined(raw.previewText),
        replyTo: orUndefined(raw.replyTo),
        contactProperties: raw.contactProperties as Record<string, unknown> | undefined,
      },
    };
  }
  if (content.case === "templated") {
    return {
      ...base,
      content: { kind: "templated", template: content.value.template, variables: (content.value.variables ?? {}) as Record<string, unknown> },
    };
  }
  throw new EmailError("invalid_payload", 400, "An email needs either raw content (from, subject, html) or a template");
}

/** Domain record -> proto. */
export function protoRecord(record: EmailRecord): ProtoRecord {
  return create(EmailRecordSchema, {
    id: record.id,
    messageId: record.messageId,
    status: STATUS[record.status],
    to: record.to,
    type: record.type,
    from: record.from ?? "",
    subject: record.subject ?? "",
    template: record.template ?? "",
    groupBy: record.groupBy ?? "",
    sendAt: record.sendAt ? timestampFromDate(new Date(record.sendAt)) : undefined,
    createdAt: timestampFromDate(new Date(record.createdAt)),
    updatedAt: timestampFromDate(new Date(record.updatedAt)),
    statusReason: record.statusReason ?? "",
  });
}

function errorInit(err: EmailError): AppErrorInit {
  return {
    code: err.code,
    httpStatus: err.httpStatus,
    message: err.message,
    allowedEmails: err.details.allowedEmails,
    allowedDomains: err.details.allowedDomains,
    extra: err.details.extra,
  };
}

/** Domain errors cross RPC as ConnectErrors with ErrorInfo; others pass unchanged. */
async function translated<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof EmailError) throw appError(errorInit(err));
    throw err;
  }
}

/** The Connect EmailService: proto in, proto out, no business rules. */
export function emailRoutes(service: EmailService) {
  return (router: ConnectRouter) =>
    router.service(EmailServiceDesc, {
      sendEmail: (req) =>
        translated(async () => ({ email: protoRecord(await service.send(req.workspaceId, requestOf(req.email))) })),

      sendBatch: (req) =>
        translated(async () => {
          assertBatchSize(req.emails.length);
          const requests: EmailRequest[] = [];
          const invalid: Array<{ index: number; to: string; error: EmailError }> = [];
          // An item the proto cannot express as an email fails alone, like any invalid item.
          const positions: number[] = [];
          req.emails.forEach((input, index) => {
            try {
              requests.push(requestOf(input));
              positions.push(index);
            } catch (err) {
              if (!(err instanceof EmailError)) throw err;
              invalid.push({ index, to: input.to, error: err });
            }
          });
          const result = requests.length
            ? await service.sendBatch(req.workspaceId, requests)
            : { successful: [], failed: [] };
          const failed = [...invalid, ...result.failed.map((f) => ({ ...f, index: positions[f.index] }))].sort((a, b) => a.index - b.index);
          return {
            successful: result.successful.map(protoRecord),
            failed: failed.map((f) => create(BatchFailureSchema, { index: f.index, to: f.to, error: toErrorInfo(errorInit(f.error)) })),
          };
        }),

      getEmail: (req) => translated(async () => ({ email: protoRecord(await service.get(req.workspaceId, req.id)) })),

      cancelEmail: (req) => translated(async () => ({ email: protoRecord(await service.cancel(req.workspaceId, req.id)) })),

      getCompiledContent: (req) =>
        translated(async () => ({ compiled: fromBinary(CompiledMessageSchema, await service.compiledContent(req.workspaceId, req.id)) })),
    });
}
