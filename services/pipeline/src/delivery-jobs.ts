/**
 * The one publisher of delivery work (DESIGN §9.1): single jobs and a broadcast's page jobs,
 * on the lane their source belongs to. Each is published with a msgID (the delivery id, the
 * page id), so a publish repeated after a crash is a no-op within the stream's window.
 *
 * Units describe the work in the wire-free shapes of work.ts; this module is the one place
 * that builds the protobuf DeliveryJob and DeliveryPage from them.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JetStreamClient } from "@nats-io/jetstream";
import { publishTraced } from "@mailroom/kit/jetstream/publish.js";
import { deliveryJobSubject } from "./subjects.js";
import {
  DeliveryJobSchema,
  DeliveryPageSchema,
  DeliverySource,
  type DeliveryJob,
  type DeliveryPage,
} from "@mailroom/proto/events/v1/events_pb.js";
import { deliverySourceOf } from "./delivery-source.js";
import type { DeliveryJobSpec, DeliveryPageSpec } from "./work.js";


/** Subject suffix that tells a broadcast's page job from its single (retry) jobs on one lane. */
export const PAGE_SUFFIX = ".page";

/** The subject of a page job: `mail.delivery.broadcast.<broadcast>.page`. */
export function deliveryPageSubject(broadcastId: string): string {
  return deliveryJobSubject("broadcast", broadcastId) + PAGE_SUFFIX;
}

const BROADCAST_PREFIX = deliveryJobSubject("broadcast", "x").slice(0, -1);

/**
 * `mail.delivery.broadcast.<broadcast>.page` exactly: a broadcast whose id is `page` has
 * single jobs on `mail.delivery.broadcast.page`, which must not read as a page.
 */
export function isPageSubject(subject: string): boolean {
  if (!subject.endsWith(PAGE_SUFFIX) || !subject.startsWith(BROADCAST_PREFIX)) return false;
  const broadcast = subject.slice(BROADCAST_PREFIX.length, subject.length - PAGE_SUFFIX.length);
  return broadcast.length > 0 && !broadcast.includes(".");
}

/** The protobuf DeliveryJob of a job spec, as it goes on the queue. */
export function deliveryJobOf(spec: DeliveryJobSpec): DeliveryJob {
  const replyTo = [...(spec.replyTo ?? [])];
  return create(DeliveryJobSchema, {
    deliveryId: spec.deliveryId,
    workspaceId: spec.workspaceId,
    source: deliverySourceOf(spec.source),
    messageId: spec.messageId,
    emailId: spec.emailId ?? "",
    broadcastId: spec.broadcastId ?? "",
    recipient: {
      email: spec.recipient.email,
      contactId: spec.recipient.contactId ?? "",
      variablesJson: spec.recipient.variablesJson ?? new Uint8Array(0),
    },
    fromEmail: spec.fromEmail,
    fromName: spec.fromName ?? "",
    // The first address also in the single field, for workers that predate the list.
    replyTo: replyTo[0] ?? "",
    replyToList: replyTo,
    contentRef: spec.contentRef,
    subjectPrefix: spec.subjectPrefix ?? "",
    groupBy: spec.groupBy ?? "",
    enqueuedAt: timestampFromDate(spec.enqueuedAt),
    requestId: spec.requestId ?? "",
    notBefore: spec.notBefore ? timestampFromDate(spec.notBefore) : undefined,
    cc: [...(spec.cc ?? [])],
    bcc: [...(spec.bcc ?? [])],
    tags: (spec.tags ?? []).map((t) => ({ name: t.name, value: t.value })),
    content: spec.content ?? new Uint8Array(0),
  });
}

/** The protobuf DeliveryPage of a page spec (a broadcast's, so source BROADCAST). */
export function deliveryPageOf(spec: DeliveryPageSpec): DeliveryPage {
  return create(DeliveryPageSchema, {
    pageId: spec.pageId,
    workspaceId: spec.workspaceId,
    source: DeliverySource.BROADCAST,
    broadcastId: spec.broadcastId,
    contentRef: spec.contentRef,
    fromEmail: spec.fromEmail,
    fromName: spec.fromName ?? "",
    replyToList: [...(spec.replyTo ?? [])],
    subjectPrefix: spec.subjectPrefix ?? "",
    recipients: spec.recipients.map((r) => ({
      deliveryId: r.deliveryId,
      messageId: r.messageId,
      email: r.email,
      contactId: r.contactId,
      variablesJson: r.variablesJson,
    })),
    enqueuedAt: timestampFromDate(spec.enqueuedAt),
    requestId: spec.requestId ?? "",
  });
}

export class DeliveryJobPublisher {
  constructor(private readonly js: JetStreamClient) {}

  /** One recipient's job; resolves once the stream stored it. */
  async publishJob(job: DeliveryJobSpec): Promise<void> {
    const message = deliveryJobOf(job);
    const subject = deliveryJobSubject(job.source, message.broadcastId);
    await publishTraced(this.js, subject, toBinary(DeliveryJobSchema, message), { msgID: message.deliveryId });
  }

  /** A page of a broadcast's recipients; resolves once the stream stored it. */
  async publishPage(page: DeliveryPageSpec): Promise<void> {
    if (!page.pageId || !page.broadcastId) throw new Error("a page job needs page_id and broadcast_id");
    const message = deliveryPageOf(page);
    await publishTraced(this.js, deliveryPageSubject(message.broadcastId), toBinary(DeliveryPageSchema, message), { msgID: message.pageId });
  }
}
