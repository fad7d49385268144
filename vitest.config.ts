// Two projects: unit tests beside the code (no servers), and integration tests under test/ that
// run on the real test ground (etcd + kube-apiserver, Redis, Chromium) started once per run by
// test/ground/global-setup.ts.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    reporters: ["default"],
    // Two cores: at most two test files at a time, so the real servers are not starved.
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: "unit",
          include: ["services/*/src/**/*.test.ts", "operator/src/**/*.test.ts"],
          environment: "node",
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/ground/global-setup.ts"],
          // Fails a file that leaves Qdrant collections behind on the run's server.
          setupFiles: ["test/ground/qdrant-guard.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: "forks",
        },
      },
    ],
  },
});
