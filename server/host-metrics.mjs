// The process's figures for /metrics (services/metrics.mjs), as Go's
// Prometheus client reads them on Linux: memory and CPU from Node, virtual
// memory, open descriptors and their limit from /proc (left out where
// there is no /proc).
import { readFileSync, readdirSync } from "node:fs";

const startSeconds = Math.round(Date.now() / 10 - performance.now() / 10) / 100;

function proc(read) {
  try {
    return read();
  } catch {
    return undefined;
  }
}

export function hostMetrics() {
  const cpu = process.cpuUsage();
  return {
    residentBytes: process.memoryUsage.rss(),
    cpuSeconds: Math.round((cpu.user + cpu.system) / 1e4) / 100,
    startSeconds,
    // (field 23 of stat; the command name before it may hold spaces)
    virtualBytes: proc(() => Number(readFileSync("/proc/self/stat", "latin1").split(") ")[1].split(" ")[20])),
    // (readdir's own descriptor is in the list)
    openFds: proc(() => readdirSync("/proc/self/fd").length - 1),
    maxFds: proc(() => Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "latin1"))[1])),
  };
}
