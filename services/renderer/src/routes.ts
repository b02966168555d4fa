import { create } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  CompileResponseSchema,
  DetectVariablesResponseSchema,
  RenderResponseSchema,
  RendererService,
  type CompileRequest,
  type CompiledMessage,
} from "../../../gen/mailroom/renderer/v1/renderer_pb.js";
import { badRequest } from "../../kit/src/errors.js";
import { compileMessage, type CompileInput } from "./compile.js";
import { mergeMessage } from "./merge.js";
import { detectVariables } from "./variables.js";

export interface RendererDeps {
  secret: string;
  publicUrl: string;
}

/** Connect service: proto in, proto out; the rules live in compile/merge/variables. */
export function rendererRoutes(deps: RendererDeps) {
  const compile = (req: CompileRequest) => compileMessage(compileInput(req), deps);
  return (router: ConnectRouter) =>
    router.service(RendererService, {
      detectVariables(req) {
        return create(DetectVariablesResponseSchema, detectVariables(req));
      },
      compile(req) {
        return create(CompileResponseSchema, { compiled: compile(req) });
      },
      render(req) {
        let compiled: CompiledMessage;
        if (req.source.case === "content") compiled = compile(req.source.value);
        else if (req.source.case === "compiled") compiled = req.source.value;
        else throw badRequest("source_required", "either content or compiled is required");
        let merged;
        try {
          merged = mergeMessage(
            compiled,
            { email: req.recipientEmail, contactId: req.contactId, messageId: req.messageId, variables: req.variables },
            deps,
          );
        } catch (err) {
          if (err instanceof RangeError) throw badRequest("invalid_compiled_message", err.message);
          throw err;
        }
        return create(RenderResponseSchema, merged);
      },
    });
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
  };
}
