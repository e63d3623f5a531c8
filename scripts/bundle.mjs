// The edge package's Node bundles (esbuild): js/dist/node.cjs for require()
// and js/dist/node.mjs for import. One file loads faster than the module
// graph it replaces (Node's ESM loader costs ~0.5 ms a module: ~6 ms of a
// cold start). js/errors.js stays outside the ES bundle, so the stores and
// the client, which import it too, share its one LeaseError class with the
// lessor. The bundles sit one folder below js/, as the entries do
// (js/entries/), so the wasm's path ("../pkg/...") is the same in both.
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { build } from "esbuild";

// The core seeds its hash maps through getrandom, whose glue calls
// globalThis.crypto.getRandomValues: in the Node bundles that call is
// js/entries/node-random.js's fillRandom (why: there). A glue without that
// one call fails the build rather than losing the change unseen.
const nodeRandom = {
  name: "node-random",
  setup(b) {
    b.onLoad({ filter: /\/pkg\/edge_lease\.js$/ }, async (args) => {
      const text = await readFile(args.path, "utf8");
      const call = "globalThis.crypto.getRandomValues(";
      if (text.split(call).length !== 2) throw new Error(`${args.path}: expected exactly one ${call}`);
      const contents = `import { fillRandom } from "../entries/node-random.js";\n${text.replace(call, "fillRandom(")}`;
      return { contents, loader: "js", resolveDir: dirname(args.path) };
    });
  },
};

const common = { bundle: true, platform: "node", logLevel: "error", external: ["../pkg/edge_lease_bg.wasm"], plugins: [nodeRandom] };

await build({ ...common, entryPoints: ["js/entries/cjs.mjs"], format: "cjs", outfile: "js/dist/node.cjs" });

const sharedErrors = {
  name: "shared-errors",
  setup(b) {
    b.onResolve({ filter: /\/errors\.js$/ }, (args) =>
      args.resolveDir.endsWith("/js") ? { path: "../errors.js", external: true } : undefined,
    );
  },
};
await build({ ...common, entryPoints: ["js/entries/node.mjs"], format: "esm", outfile: "js/dist/node.mjs", plugins: [nodeRandom, sharedErrors] });
