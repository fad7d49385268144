// The module structure npm test holds (scripts/structure.test.ts runs this; `npx depcruise
// services operator scripts test` prints it): no import cycles anywhere, and no service (or the
// operator) reaching into another package's source: they share code through @capstan/shared only.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import cycle: split the shared part into its own module.",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-cross-package-src",
      severity: "error",
      comment:
        "A service imports another service's (or the operator's) source; move the shared part to @capstan/shared.",
      from: { path: "^(services/(gateway|search|scraper)|operator)/" },
      to: {
        path: "^(services/(gateway|search|scraper)|operator)/",
        pathNot: ["^$1/"],
      },
    },
    {
      name: "shared-depends-on-no-service",
      severity: "error",
      comment: "@capstan/shared is below every service: it imports none of them.",
      from: { path: "^services/shared/" },
      to: { path: "^(services/(gateway|search|scraper)|operator)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)node_modules/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
