import type { RouteModule } from "./route.js";

/** On broadcast routes a request the route's schema refuses is an `invalid_payload` naming what is allowed (design §6). */
export function broadcastScope(register: RouteModule): RouteModule {
  return (app, deps) => {
    app.register(async (scope) => {
      scope.addHook("onRoute", (options) => {
        options.config = { ...options.config, errorCodes: { invalid_request: "invalid_payload", ...options.config?.errorCodes } };
      });
      register(scope, deps);
    });
  };
}
