// Miniflare options for a module worker that uses edge-lease, shared by the
// workerd tests and the cold-start benchmark: ES modules, and .wasm imported
// as a compiled WebAssembly.Module (workerd forbids compiling bytes).
export function workerOptions(scriptPath, modulesRoot) {
  return {
    modules: true,
    scriptPath,
    modulesRoot,
    modulesRules: [
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
      { type: "CompiledWasm", include: ["**/*.wasm"] },
    ],
    compatibilityDate: "2025-01-01",
  };
}
