/** The contact page's import path: the webhook event views are views/webhook-events.ts. */
export { contactWebhookHistory } from "./views/webhook-events.js";
