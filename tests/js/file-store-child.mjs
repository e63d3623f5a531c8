// Child process of file-store.test.mjs: opens the store in argv[2] and
// changes it in a loop until killed. Before each operation it prints its
// intent, and after the operation returns (durable: the file store fsyncs
// inside write) its acknowledgement, one JSON line each. process.stdout is
// synchronous for pipes on Linux, so a printed ack was really printed.
// Compactions run in the background while the loop goes on writing (it
// yields after every operation), so kills land inside them too.
import { Lessor } from "edge-lease";
import { FileStore } from "edge-lease/stores/file";

const [dir, seedArg] = process.argv.slice(2);
let seed = Number(seedArg) >>> 0 || 1;
function rand(n) {
  // xorshift32: reproducible from the seed the parent prints on failure.
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed % n;
}

// Small thresholds so compactions happen often and kills can land in them.
const store = FileStore.open(dir, { minCompactBytes: 2048, compactFactor: 2 });
const tick = () => new Promise((resolve) => setImmediate(resolve));
const lessor = new Lessor({ storage: store, restore: store.entries(), autoTick: false });
const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");

for (let seq = 0; ; seq++) {
  const leases = lessor.leases();
  const lease = leases.length > 0 ? leases[rand(leases.length)] : null;
  const r = rand(100);
  if (lease === null || (r < 10 && leases.length < 6)) {
    say({ intent: "grant" });
    const g = lessor.grant(3600);
    say({ ack: "grant", id: g.id });
  } else if (r < 55) {
    const key = `k${rand(16)}`;
    const value = `v${seq}`;
    const onLease = rand(2) === 0 ? lease : null;
    say({ intent: "put", key, value, lease: onLease });
    const p = lessor.put(key, value, onLease ? { lease: onLease } : undefined);
    say({ ack: "put", key, value, lease: onLease, revision: p.revision });
  } else if (r < 70) {
    const key = `k${rand(16)}`;
    say({ intent: "delete", key });
    const d = lessor.delete(key);
    say({ ack: "delete", key, deleted: d.deleted, revision: d.revision });
  } else if (r < 95) {
    say({ intent: "renew", id: lease });
    lessor.renew(lease);
    say({ ack: "renew", id: lease });
  } else {
    say({ intent: "revoke", id: lease });
    const v = lessor.revoke(lease);
    say({ ack: "revoke", id: lease, keys: v.keys, revision: v.revision });
  }
  store.compactFrom(lessor).then((did) => did && say({ ack: "compact", sizes: store.sizes }));
  await tick();
}
