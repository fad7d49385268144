// Golden tests of the pure translators: config and resources in (testdata/*.in.yaml), desired
// objects out (testdata/*.golden.yaml). UPDATE_GOLDEN=1 rewrites the golden files after a deliberate change.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseResource, type Scraper } from "@capstan/shared/api";
import { describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { loadOperatorConfig } from "../config.ts";
import { CONFIG_HASH } from "./common.ts";
import { scraperObjects } from "./scraper.ts";
import { gatewayObjects, searchObjects } from "./workloads.ts";

const dir = fileURLToPath(new URL("./testdata/", import.meta.url));

function golden(name: string, value: unknown): void {
  const file = `${dir}${name}.golden.yaml`;
  const text = stringify(value, { lineWidth: 0 });
  if (process.env.UPDATE_GOLDEN === "1") writeFileSync(file, text);
  expect(existsSync(file), `testdata/${name}.golden.yaml is missing (UPDATE_GOLDEN=1 writes it)`).toBe(true);
  expect(text, `${name} differs from testdata/${name}.golden.yaml (UPDATE_GOLDEN=1 after a deliberate change)`).toBe(
    readFileSync(file, "utf8"),
  );
}

const config = loadOperatorConfig({}, parse(readFileSync(`${dir}config.in.yaml`, "utf8")) as Record<string, unknown>);

describe("data-plane workloads", () => {
  it("gateway Deployment and Service", () => {
    golden("gateway", gatewayObjects(config, [{ namespace: "team-a", secret: "openai", key: "apiKey" }]));
  });
  it("search Deployment and Service", () => {
    golden("search", searchObjects(config));
  });
  it("the provider-key volume appears only with provider keys", () => {
    expect(JSON.stringify(gatewayObjects(config, []))).not.toContain("provider-keys");
  });
});

describe("Scraper", () => {
  const raw = parse(readFileSync(`${dir}scraper.in.yaml`, "utf8"));
  const scraper = { ...parseResource(raw), metadata: { ...raw.metadata, uid: "0000-1111" } } as Scraper;

  it("Deployment (scraper + rendering service) and Service", () => {
    golden("scraper", scraperObjects(scraper, config));
  });

  it("a spec change changes the pod template's config hash; the same spec does not", () => {
    const hash = (s: Scraper) =>
      (
        (scraperObjects(s, config)[0] as { spec?: unknown }).spec as {
          template: { metadata: { annotations: Record<string, string> } };
        }
      ).template.metadata.annotations[CONFIG_HASH];
    const changed = { ...scraper, spec: { ...scraper.spec, logLevel: "debug" as const } };
    expect(hash(scraper)).toBe(hash({ ...scraper }));
    expect(hash(changed)).not.toBe(hash(scraper));
  });
});
