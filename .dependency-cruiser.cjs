// Import boundaries, checked by `npm run lint` (depcruise). The units and libraries are
// found on disk, as in /work/shared/hooks/unit-imports.mjs: a unit is gateway/, cli/ or a
// folder under services/ with src/main.ts; a folder under services/ without one is a
// library. A unit may import itself, libraries, gen/ and packages, never another unit;
// tests and their helpers may (they wire units together). Libraries import no unit.
// The console (console/, @mailroom/console) is a package the gateway mounts: the gateway
// may import it; it imports libraries, gen/ and packages, never a unit (its tests may).
// Nothing may form an import cycle, type-only imports included.
const fs = require("node:fs");
const path = require("node:path");

const services = fs
  .readdirSync(path.join(__dirname, "services"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const isUnit = (name) => fs.existsSync(path.join(__dirname, "services", name, "src", "main.ts"));
const alternatives = (names) => `^(${names.map((name) => name.replace(/[.+]/g, "\\$&")).join("|")})/`;
const UNITS = alternatives(["gateway", "cli", ...services.filter(isUnit).map((name) => `services/${name}`)]);
const LIBRARIES = alternatives(services.filter((name) => !isUnit(name)).map((name) => `services/${name}`));
const TESTS = "(\\.(test|spec)\\.tsx?|testing\\.ts|test-(support|helpers)\\.ts)$";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cross-unit",
      comment: "A unit imports only itself, libraries (services/kit, services/content), gen/ and packages.",
      severity: "error",
      from: { path: UNITS, pathNot: TESTS },
      to: { path: UNITS, pathNot: "^$1/" },
    },
    {
      name: "no-console-to-unit",
      comment: "The console is mounted by the gateway: it imports libraries, gen/ and packages, never a unit (the gateway passes in what it needs).",
      severity: "error",
      from: { path: "^console/", pathNot: TESTS },
      to: { path: UNITS },
    },
    {
      name: "no-unit-to-console",
      comment: "Only the gateway mounts the console.",
      severity: "error",
      from: { path: UNITS, pathNot: ["^gateway/", TESTS] },
      to: { path: "^console/" },
    },
    {
      name: "no-library-to-unit",
      comment: "Libraries are shared by units, so they must not depend on any unit.",
      severity: "error",
      from: { path: LIBRARIES },
      to: { path: [UNITS, "^console/"] },
    },
    {
      name: "pure-domain",
      comment:
        "A service's domain/ knows no wire format, transport or store query: protobuf, Connect, NATS, HTTP, kit's transports, the store and the pipeline (but for its wire-free work.ts), and its own adapters and transports stay outside.",
      severity: "error",
      // The compiler that builds the CompiledMessage (the content contract that crosses to
      // delivery as protobuf) is the content library's, outside every domain.
      from: { path: "^services/[^/]+/src/domain/", pathNot: TESTS },
      to: {
        path: [
          "^gen/",
          "(^|/)node_modules/(@bufbuild|@connectrpc|@nats-io|fastify)",
          "^services/kit/src/(connect|jetstream)",
          "^services/(store|pipeline)/",
          "^services/[^/]+/src/(adapters|routes|consumers|main)",
        ],
        // The pipeline's wire-free shapes of delivery work (DeliveryJobSpec, DeliveryPageSpec,
        // variablesJson): what a domain hands the one publisher, which builds the protobuf.
        pathNot: "^services/pipeline/src/work\\.ts$",
      },
    },
    {
      name: "no-test-support-in-production",
      comment: "Fakes and builders (src/testing.ts, test-support) serve tests only: running code never imports them, so the sizes of units leave them out with the tests.",
      severity: "error",
      from: { pathNot: [TESTS, "^(test|bench)/"] },
      to: { path: TESTS },
    },
    {
      name: "no-circular",
      comment: "Import cycles (type-only imports included) tangle modules that should layer.",
      severity: "error",
      from: { pathNot: TESTS },
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // gen/ and packages are leaves: their own imports are not cruised, but importing them is seen.
    doNotFollow: { path: "^(gen|node_modules)/" },
    cache: false,
  },
};
