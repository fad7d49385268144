// Three projects: unit tests beside the code (no servers), integration tests under test/ that
// run on the real test ground (etcd + kube-apiserver, Redis, Chromium) started once per run by
// test/ground/global-setup.ts, and e2e tests (test/e2e/) on a real single-node cluster started by
// test/e2e/global-setup.ts.
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
          include: [
            "services/*/src/**/*.test.ts",
            "operator/src/**/*.test.ts",
            "console/src/**/*.test.ts",
            "scripts/**/*.test.ts",
          ],
          environment: "node",
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**", "**/node_modules/**"],
          environment: "node",
          globalSetup: ["test/ground/global-setup.ts"],
          // Fails a file that leaves Qdrant collections behind on the run's server.
          setupFiles: ["test/ground/qdrant-guard.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: "forks",
        },
      },
      {
        // A real single-node cluster (test/ground/node.ts) started once per run; the files share
        // it, so they run one at a time (one fork: `fileParallelism` is a root-only option).
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 600_000,
          hookTimeout: 900_000,
          pool: "forks",
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
