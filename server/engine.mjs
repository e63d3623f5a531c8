// The etcd server's engine on Node: the build of crates/wasm with its etcd
// feature (dist/engine/), which adds HashKV and etcd's snapshot file to what
// the edge loads.
import { readFileSync } from "node:fs";
import * as engine from "../dist/engine/edge_lease.js";
import { lessorOver } from "edge-lease/engine";

engine.initSync({ module: readFileSync(new URL("../dist/engine/edge_lease_bg.wasm", import.meta.url)) });

export const Lessor = lessorOver(engine);
