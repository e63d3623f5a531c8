// /metrics' counts of calls per client version (etcd_server_client_requests_total):
// the version is the client's own text, so what it may add is bounded: a
// label value that is not short plain text, or a version once 64 label sets
// are counted, is counted as "other", and the text stays valid Prometheus.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createCallCounters } from "../../etcd/services/metrics.mjs";
import { services as schema } from "../../etcd/proto/schema.mjs";

const samples = (counters) =>
  counters
    .families()
    .join("\n")
    .split("\n")
    .filter((l) => l.startsWith("etcd_server_client_requests_total{"));

test("calls per client version: by type, 'unknown' without a version, 'other' past the bounds", () => {
  const c = createCallCounters(schema);
  assert.deepEqual(samples(c), [], "no family before the first call");
  const range = c.of("/etcdserverpb.KV/Range");
  const watch = c.of("/etcdserverpb.Watch/Watch");
  range.client("3.4");
  range.client("3.4");
  range.client(null);
  watch.client("3.5");
  range.client('3.4"} 1\nfake_metric{a="');
  range.client("x".repeat(33));
  assert.deepEqual(samples(c), [
    'etcd_server_client_requests_total{client_api_version="3.4",type="unary"} 2',
    'etcd_server_client_requests_total{client_api_version="3.5",type="stream"} 1',
    'etcd_server_client_requests_total{client_api_version="other",type="unary"} 2',
    'etcd_server_client_requests_total{client_api_version="unknown",type="unary"} 1',
  ]);
  for (let i = 0; i < 100; i++) range.client(`9.${i}`);
  const lines = samples(c);
  assert.equal(lines.length, 64, "64 label sets at most, 'other' among them");
  const other = Number(/ (\d+)$/.exec(lines.find((l) => l.includes('"other",type="unary"')))[1]);
  assert.equal(other, 2 + (100 - 60), "the versions past the 64th, with the two before");
});
