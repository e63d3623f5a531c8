// The Worker under test: the package's own edge-lease/worker, as a user
// deploys it (tests/workerd/worker.test.mjs).
export { default, LeaseNamespace } from "../../worker/index.mjs";
