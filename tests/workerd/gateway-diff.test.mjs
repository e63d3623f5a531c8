// The JSON gateway test written for the Node server (tests/etcd/gateway-diff),
// against edge-lease/worker in Miniflare: the same calls to a real etcd 3.4
// and to the Worker (namespace "edge-node") answer the same.
process.env.EDGE_LEASE_SERVER = "worker";
await import("../etcd/gateway-diff.test.mjs");
