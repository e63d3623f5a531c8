// The Node bundles (esbuild): dist/node.cjs for require() and dist/node.mjs
// for import. One file loads faster than the module graph it replaces (Node's
// ESM loader costs ~0.5 ms a module: ~6 ms of a cold start). js/errors.js
// stays outside the ES bundle, so the stores and the client, which import it
// too, share its one LeaseError class with the lessor.
import { build } from "esbuild";

const common = { bundle: true, platform: "node", logLevel: "error", external: ["../pkg/edge_lease_bg.wasm"] };

await build({ ...common, entryPoints: ["js/cjs.mjs"], format: "cjs", outfile: "dist/node.cjs" });

const sharedErrors = {
  name: "shared-errors",
  setup(b) {
    b.onResolve({ filter: /\/errors\.js$/ }, (args) =>
      args.resolveDir.endsWith("/js") ? { path: "../js/errors.js", external: true } : undefined,
    );
  },
};
await build({ ...common, entryPoints: ["js/node.mjs"], format: "esm", outfile: "dist/node.mjs", plugins: [sharedErrors] });
