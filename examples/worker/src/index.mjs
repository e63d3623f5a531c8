// The whole Worker: edge-lease's router and its Durable Object class.
export { default, LeaseNamespace } from "edge-lease-etcd/worker";
