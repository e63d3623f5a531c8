// The engine the etcd API runs on, declared once (as kine's Backend
// interface is): the members of edge-lease's Lessor that etcd/ uses. The
// host injects it (`createServices({ lessor, store })`); etcd/ imports
// nothing else of the engine. tests/layers.test.mjs checks that etcd/ uses
// no other member.
import type { Lessor } from "edge-lease";
import type { FileStore } from "edge-lease/stores/file";

export type Engine = Pick<
  Lessor,
  | "grant"
  | "renew"
  | "revoke"
  | "timeToLive"
  | "leases"
  | "put"
  | "range"
  | "deleteRange"
  | "txn"
  | "nextDeadline"
  | "compact"
  | "whenCompacted"
  | "watch"
  | "revision"
  | "compactRevision"
  | "keyCount"
  | "sizeBytes"
  | "counts"
  | "hashKv"
  | "etcdKeyBucket"
  | "hostEntry"
  | "setHostEntry"
  | "holdExpiry"
  | "expiryHeld"
  | "expiryHeldSince"
  | "pendingWrites"
  | "flush"
  | "addEventListener"
>;

/** What etcd/ reads of the engine's store, where the host has one: its sizes for Status and /metrics, and Defragment's compaction. */
export type EngineStore = Partial<Pick<FileStore, "sizes" | "bytesWritten" | "compactFrom">>;
