// charts/capstan's image values as a release uses them: every image by digest (repository@sha256:…,
// the tag then ignored) and a pull Secret, carried to every pod the chart renders and, through the
// operator's config and env, to the gateway, search and Scraper pods the operator applies. The
// rendered objects are checked by the real API server (server-side dry run).
import { parseResource, type Scraper } from "@capstan/shared/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scraperObjects } from "../../operator/src/translate/scraper.ts";
import { gatewayObjects, searchObjects } from "../../operator/src/translate/workloads.ts";
import { rawExamples } from "../ground/kube-client.ts";
import { ChartRun, MINIMAL, pod, type Rendered } from "./chart-kit.ts";

const run = new ChartRun("chartimg");
const REGISTRY = "registry.example:5000/capstan";
const digestOf = (name: string) => `sha256:${name.charCodeAt(0).toString(16).padStart(64, "0")}`;
const NAMES = ["operator", "gateway", "search", "scraper", "console"] as const;
const DEV = ["redis", "qdrant"] as const;

const set = [
  ...MINIMAL,
  "qdrant.deploy.enabled=true",
  "imagePullSecrets[0].name=registry-pull",
  ...NAMES.flatMap((n) => [
    `${n}.image.repository=${REGISTRY}/${n}`,
    `${n}.image.tag=ignored`,
    `${n}.image.digest=${digestOf(n)}`,
  ]),
  ...DEV.flatMap((n) => [`${n}.deploy.image.repository=${REGISTRY}/${n}`, `${n}.deploy.image.digest=${digestOf(n)}`]),
];
const byDigest = (name: string) => `${REGISTRY}/${name}@${digestOf(name)}`;
const pullSecrets = [{ name: "registry-pull" }];
type PullPod = ReturnType<typeof pod> & { imagePullSecrets?: { name: string }[] };

beforeAll(() => run.setup());
afterAll(() => run.cleanup());

describe("images by digest with a pull Secret", () => {
  it("the chart's own pods run repository@digest and pull with the Secret", async () => {
    const objects = await render();
    const deployments = objects.filter((o) => o.kind === "Deployment");
    const images = Object.fromEntries(
      deployments.map((d) => [d.metadata.name.replace(/^.*-/, ""), pod(d).containers[0]?.image]),
    );
    expect(images).toEqual({
      operator: byDigest("operator"),
      console: byDigest("console"),
      redis: byDigest("redis"),
      qdrant: byDigest("qdrant"),
    });
    for (const d of deployments) {
      expect((pod(d) as PullPod).imagePullSecrets, d.metadata.name).toEqual(pullSecrets);
      await run.apply(d);
    }
  });

  it("the gateway, search and Scraper pods the operator applies do too", async () => {
    const c = run.operatorConfig(await render());
    const raw = rawExamples().find((o) => o.kind === "Scraper");
    if (!raw) throw new Error("examples/ has no Scraper");
    const scraper = { ...parseResource(raw), metadata: { ...raw.metadata, uid: "0000-1111" } } as Scraper;
    const applied: [string, Rendered][] = [
      ["gateway", gatewayObjects(c, [])[0] as Rendered],
      ["search", searchObjects(c)[0] as Rendered],
      ["scraper", scraperObjects(scraper, c)[0] as Rendered],
    ];
    for (const [name, workload] of applied) {
      const spec = pod(workload) as PullPod;
      expect(spec.containers[0]?.image, name).toBe(byDigest(name));
      expect(spec.imagePullSecrets, name).toEqual(pullSecrets);
    }
  });

  it("refuses a digest that is not sha256:<64 hex>, naming the key", async () => {
    const err = await run.refused([...MINIMAL, "gateway.image.digest=latest"]);
    expect(err).toContain("gateway.image.digest");
  });

  it("renders no imagePullSecrets and repository:tag by default", async () => {
    const objects = await run.render(MINIMAL);
    for (const d of objects.filter((o) => o.kind === "Deployment")) {
      expect((pod(d) as PullPod).imagePullSecrets, d.metadata.name).toBeUndefined();
      expect(pod(d).containers[0]?.image).not.toContain("@");
    }
  });
});

function render(): Promise<Rendered[]> {
  return run.render(set);
}
