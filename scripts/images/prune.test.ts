// scripts/images/prune.mjs on a store listing shaped like `buildah images --json`: two builds kept,
// an older one and an older base dropped, and the untagged build stages following their builds.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("./prune.mjs", import.meta.url));

function prune(images: object[], args: string[]): string[] {
  const out = execFileSync(process.execPath, [script, ...args], { input: JSON.stringify(images), encoding: "utf8" });
  return out.split("\n").filter(Boolean).sort();
}

const image = (id: string, created: number, ...names: string[]) => ({ id, created, names });

describe("images of older builds in buildah's store", () => {
  const store = [
    image("base-old", 1, "localhost/capstan-base:old"),
    image("base-now", 2, "localhost/capstan-base:now"),
    image("stage-a", 10),
    image("gateway-a", 11, "localhost/capstan/gateway:aaa"),
    image("redis", 12, "localhost/capstan/redis:aaa", "localhost/capstan/redis:bbb", "localhost/capstan/redis:ccc"),
    image("stage-b", 20),
    image("gateway-b", 21, "localhost/capstan/gateway:bbb"),
    image("stage-c", 30),
    image("gateway-c", 31, "localhost/capstan/gateway:ccc"),
    image("stage-in-progress", 40),
    image("someone-elses", 5, "docker.io/library/debian:12"),
  ];

  it("removes the dropped build's images and stages and the other bases, and keeps the rest", () => {
    expect(prune(store, ["--base", "localhost/capstan-base:now", "bbb", "ccc"])).toEqual([
      "base-old",
      "gateway-a",
      "stage-a",
    ]);
  });

  it("keeps everything when every build is kept", () => {
    expect(prune(store, ["--base", "localhost/capstan-base:now", "aaa", "bbb", "ccc"])).toEqual(["base-old"]);
  });
});
