import { randomBytes } from "node:crypto";
import { newId } from "@mailroom/kit/ids.js";
import type { Ids } from "../domain/ports.js";

/**
 * Ids and secrets. A generated token is a Standard Webhooks secret: `whsec_` + base64 of
 * 32 random bytes (see domain/signature.ts for how it keys both signatures).
 */
export const systemIds: Ids = {
  webhookId: () => newId("wh"),
  deliveryId: () => newId("whd"),
  eventId: () => newId("evt"),
  token: () => `whsec_${randomBytes(32).toString("base64")}`,
};
