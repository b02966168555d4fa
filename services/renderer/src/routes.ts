import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  CompileResponseSchema,
  DetectVariablesResponseSchema,
  RenderResponseSchema,
  RendererService,
  type CompileRequest,
  type RenderRequest,
} from "@mailroom/proto/renderer/v1/renderer_pb.js";
import type { CompileInput } from "@mailroom/content/compile/compile.js";
import type { Renderer, RenderSource } from "./domain/renderer.js";

/** Connect transport: proto in, proto out; the rules live in domain/. */
export function rendererRoutes(renderer: Renderer) {
  return (router: ConnectRouter) =>
    router.service(RendererService, {
      detectVariables(req) {
        const { html, subject, previewText, customProperties } = req;
        return create(DetectVariablesResponseSchema, renderer.detectVariables({ html, subject, previewText, customProperties }));
      },
      compile(req) {
        return create(CompileResponseSchema, { compiled: renderer.compile(compileInput(req)) });
      },
      render(req) {
        const recipient = { email: req.recipientEmail, contactId: req.contactId, messageId: req.messageId, variables: req.variables };
        return create(RenderResponseSchema, renderer.render(renderSource(req), recipient));
      },
    });
}

function renderSource(req: RenderRequest): RenderSource | undefined {
  if (req.source.case === "content") return { content: compileInput(req.source.value) };
  if (req.source.case === "compiled") return { compiled: req.source.value };
  return undefined;
}

function compileInput(req: CompileRequest): CompileInput {
  return {
    html: req.html,
    subject: req.subject,
    previewText: req.previewText,
    text: req.text,
    trackClicks: req.trackClicks,
    trackOpens: req.trackOpens,
    kind: req.kind,
    contentId: req.contentId,
    workspaceId: req.workspaceId,
    literal: req.literal,
    timeZone: req.timeZone,
  };
}
