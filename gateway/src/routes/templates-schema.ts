import { z } from "zod";
import type { Template } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { iso } from "./contacts-schema.js";

/** Public JSON of stored templates (/v1/templates); content rules live in the directory. */

const content = {
  subject: z.string().min(1, "subject is required"),
  html: z.string().min(1, "html is required"),
  text: z.string().nullish(),
  previewText: z.string().nullish(),
};

export const createTemplateSchema = z.object({ name: z.string().min(1, "name is required").max(100), ...content }).strict();
/** PUT replaces the content; `name`, when given, must be the one in the path. */
export const replaceTemplateSchema = z.object({ name: z.string().optional(), ...content }).strict();

export const listTemplatesQuerySchema = z
  .object({ limit: z.coerce.number().int().min(1).max(100).optional(), cursor: z.string().max(200).optional() })
  .strict();

export function templateJson(t: Template) {
  return {
    id: t.id,
    name: t.name,
    subject: t.subject,
    html: t.html,
    text: t.text || null,
    previewText: t.previewText || null,
    variables: t.variables,
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
  };
}

/** List items leave the bodies out: fetch one template for its html and text. */
export function templateSummaryJson(t: Template) {
  const { html: _html, text: _text, ...summary } = templateJson(t);
  return summary;
}
