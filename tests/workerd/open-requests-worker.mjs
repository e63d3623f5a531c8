// The package's Worker, with its Durable Object counting the requests it
// holds open (a request is open until its answer's body has ended; an
// upgrade to a WebSocket is answered at once and holds none). `GET
// /__open/<namespace>` answers that object's count, and its open sockets.
import worker, { LeaseNamespace as Base } from "../../worker/index.mjs";

export class LeaseNamespace extends Base {
  open = 0;

  constructor(ctx, env) {
    super(ctx, env);
    this.state = ctx;
  }

  async fetch(request) {
    if (new URL(request.url).pathname === "/__open") return Response.json({ open: this.open, sockets: this.state.getWebSockets().length });
    this.open++;
    let response;
    try {
      response = await super.fetch(request);
    } catch (e) {
      this.open--;
      throw e;
    }
    if (response.status === 101 || !response.body) {
      this.open--;
      return response;
    }
    const { readable, writable } = new TransformStream();
    response.body.pipeTo(writable).finally(() => this.open--);
    return new Response(readable, response);
  }
}

export default {
  fetch(request, env, ctx) {
    const url = new URL(request.url);
    const m = /^\/__open\/([^/]+)$/.exec(url.pathname);
    if (m) return env.LEASES.get(env.LEASES.idFromName(m[1])).fetch("http://do/__open");
    return worker.fetch(request, env, ctx);
  },
};
