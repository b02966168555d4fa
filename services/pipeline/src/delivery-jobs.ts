/**
 * The one publisher of delivery work (DESIGN §9.1): single jobs and a broadcast's page jobs,
 * on the lane their source belongs to. Each is published with a msgID (the delivery id, the
 * page id), so a publish repeated after a crash is a no-op within the stream's window.
 */
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import type { JetStreamClient } from "@nats-io/jetstream";
import { deliveryJobSubject, type DeliverySourceName } from "@mailroom/kit/jetstream.js";
import { DeliveryJobSchema, DeliveryPageSchema, DeliverySource } from "../../../gen/mailroom/events/v1/events_pb.js";

export type DeliveryJobInit = MessageInitShape<typeof DeliveryJobSchema>;
export type DeliveryPageInit = MessageInitShape<typeof DeliveryPageSchema>;

const SOURCE_NAME: Partial<Record<DeliverySource, DeliverySourceName>> = {
  [DeliverySource.TRANSACTIONAL]: "transactional",
  [DeliverySource.BROADCAST]: "broadcast",
  [DeliverySource.BROADCAST_TEST]: "test",
};

export function sourceNameOf(source: DeliverySource | undefined): DeliverySourceName {
  const name = source === undefined ? undefined : SOURCE_NAME[source];
  if (!name) throw new Error(`delivery source ${source} has no lane`);
  return name;
}

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

/** Merge values as the JSON bytes jobs carry (`variables_json`). */
const encoder = new TextEncoder();
export function variablesJson(variables: Readonly<Record<string, unknown>> | undefined): Uint8Array {
  return variables && Object.keys(variables).length > 0 ? encoder.encode(JSON.stringify(variables)) : new Uint8Array(0);
}

export class DeliveryJobPublisher {
  constructor(private readonly js: JetStreamClient) {}

  /** One recipient's job; resolves once the stream stored it. */
  async publishJob(job: DeliveryJobInit): Promise<void> {
    const message = create(DeliveryJobSchema, job);
    const subject = deliveryJobSubject(sourceNameOf(message.source), message.broadcastId);
    await this.js.publish(subject, toBinary(DeliveryJobSchema, message), { msgID: message.deliveryId });
  }

  /** A page of a broadcast's recipients; resolves once the stream stored it. */
  async publishPage(page: DeliveryPageInit): Promise<void> {
    const message = create(DeliveryPageSchema, page);
    if (!message.pageId || !message.broadcastId) throw new Error("a page job needs page_id and broadcast_id");
    await this.js.publish(deliveryPageSubject(message.broadcastId), toBinary(DeliveryPageSchema, message), { msgID: message.pageId });
  }
}
