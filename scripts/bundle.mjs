// The edge package's Node bundles (esbuild): js/dist/node.cjs for require()
// and js/dist/node.mjs for import. One file loads faster than the module
// graph it replaces (Node's ESM loader costs ~0.5 ms a module: ~6 ms of a
// cold start). js/errors.js stays outside the ES bundle, so the stores and
// the client, which import it too, share its one LeaseError class with the
// lessor. The bundles sit one folder below js/, as the entries do
// (js/entries/), so the wasm's path ("../pkg/...") is the same in both.
import { build } from "esbuild";

const common = { bundle: true, platform: "node", logLevel: "error", external: ["../pkg/edge_lease_bg.wasm"] };

await build({ ...common, entryPoints: ["js/entries/cjs.mjs"], format: "cjs", outfile: "js/dist/node.cjs" });

const sharedErrors = {
  name: "shared-errors",
  setup(b) {
    b.onResolve({ filter: /\/errors\.js$/ }, (args) =>
      args.resolveDir.endsWith("/js") ? { path: "../errors.js", external: true } : undefined,
    );
  },
};
await build({ ...common, entryPoints: ["js/entries/node.mjs"], format: "esm", outfile: "js/dist/node.mjs", plugins: [sharedErrors] });
