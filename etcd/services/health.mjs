// grpc.health.v1.Health as etcd 3.4 registers it (grpc-go's health server):
// the empty service name, which stands for all of etcd's, is SERVING; any
// other name is unknown. Watch sends the status once and stays open until
// the client goes (it never changes while the server runs).
import { Code, GrpcError } from "../errors.mjs";

const statusOf = (req) => ((req.service ?? "") === "" ? "SERVING" : null);

export function healthService() {
  return {
    Check(req) {
      const status = statusOf(req);
      if (!status) throw new GrpcError(Code.NotFound, "unknown service");
      return { status };
    },
    Watch: {
      async *stream(req, call) {
        yield { status: statusOf(req) ?? "SERVICE_UNKNOWN" };
        const signal = call.signal;
        if (!signal.aborted) await new Promise((ok) => signal.addEventListener("abort", ok, { once: true }));
      },
    },
  };
}
