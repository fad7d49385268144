import { describe, expect, it } from "vitest";
import { loadOperatorConfig } from "../config.ts";
import { QDRANT_CA_DIR, qdrantSearchSettings } from "./qdrant.ts";
import { searchObjects } from "./workloads.ts";

type Container = { env: { name: string }[]; volumeMounts: { name: string; mountPath: string }[] };
type Pod = { spec: { template: { spec: { containers: Container[]; volumes: { name: string }[] } } } };

describe("the search Deployment's Qdrant settings", () => {
  it("no Qdrant: no variable, no volume", () => {
    expect(qdrantSearchSettings(loadOperatorConfig({}))).toEqual({ env: [], volumes: [], mounts: [] });
  });

  it("URL, API key from its Secret and a CA bundle from a Secret, mounted read-only", () => {
    const c = loadOperatorConfig(
      {},
      {
        qdrant: {
          url: "https://qdrant.example:6333",
          apiKeySecretRef: { name: "qdrant", key: "api-key" },
          caSecretRef: { name: "qdrant-tls", key: "ca.pem" },
        },
      },
    );
    const [deployment] = searchObjects(c) as unknown as Pod[];
    const pod = deployment?.spec.template.spec;
    const container = pod?.containers[0] as Container;
    expect(container.env).toEqual(
      expect.arrayContaining([
        { name: "QDRANT_URL", value: "https://qdrant.example:6333" },
        { name: "QDRANT_API_KEY", valueFrom: { secretKeyRef: { name: "qdrant", key: "api-key" } } },
        { name: "QDRANT_CA_FILE", value: `${QDRANT_CA_DIR}/ca.crt` },
      ]),
    );
    expect(pod?.volumes).toContainEqual({
      name: "qdrant-ca",
      secret: { secretName: "qdrant-tls", items: [{ key: "ca.pem", path: "ca.crt" }] },
    });
    expect(container.volumeMounts).toContainEqual({ name: "qdrant-ca", mountPath: QDRANT_CA_DIR, readOnly: true });
  });

  it("a CA bundle from a ConfigMap; not both", () => {
    const c = loadOperatorConfig(
      {},
      { qdrant: { url: "https://q:6333", caConfigMapRef: { name: "ca", key: "ca.crt" } } },
    );
    expect(qdrantSearchSettings(c).volumes).toEqual([
      { name: "qdrant-ca", configMap: { name: "ca", items: [{ key: "ca.crt", path: "ca.crt" }] } },
    ]);
    expect(() =>
      loadOperatorConfig(
        {},
        { qdrant: { caConfigMapRef: { name: "a", key: "b" }, caSecretRef: { name: "a", key: "b" } } },
      ),
    ).toThrow(/caSecretRef or caConfigMapRef/);
  });
});
