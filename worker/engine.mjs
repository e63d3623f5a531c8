// The etcd API's engine in workerd: the build of crates/wasm with its etcd
// feature (dist/engine/), instantiated synchronously from the module the
// runtime compiled (workerd allows no code generation from bytes).
import wasmModule from "../dist/engine/edge_lease_bg.wasm";
import * as engine from "../dist/engine/edge_lease.js";
import { lessorOver } from "edge-lease/engine";

engine.initSync({ module: wasmModule });

export const Lessor = lessorOver(engine);
