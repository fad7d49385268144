// Which images in buildah's store an image build no longer needs (called by build.sh with the
// store's `buildah images --json` on stdin): prints one image id per line to remove.
//
// - Capstan's images tagged with a tag whose archive folder was removed (argv: the kept tags).
// - Bases other than the current one (argv: --base <ref>).
// - Untagged top-level images (a Dockerfile's build stages) of the builds removed: an untagged
//   image belongs to the first build whose tagged images were created after it, so the current
//   builds' stages stay in the layer cache.
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const baseAt = args.indexOf("--base");
const base = baseAt >= 0 ? args.splice(baseAt, 2)[1] : undefined;
const kept = new Set(args);
const images = JSON.parse(readFileSync(0, "utf8"));

const tagOf = (name) => name.slice(name.lastIndexOf(":") + 1);
const remove = new Set();
const tagged = [];
for (const image of images) {
  for (const name of image.names ?? []) {
    if (name.startsWith("localhost/capstan-base:")) {
      if (base && name !== base) remove.add(image.id);
    } else if (name.startsWith("localhost/capstan/")) {
      tagged.push({ created: image.created, kept: kept.has(tagOf(name)) });
      if (!kept.has(tagOf(name))) remove.add(image.id);
    }
  }
}
tagged.sort((a, b) => a.created - b.created);
for (const image of images) {
  if ((image.names ?? []).length > 0) continue;
  const owner = tagged.find((t) => t.created >= image.created);
  if (owner && !owner.kept) remove.add(image.id);
}
// An image with several names (qdrant and redis keep one id across tags) stays while a kept tag names it.
for (const image of images) {
  if ((image.names ?? []).some((n) => n.startsWith("localhost/capstan/") && kept.has(tagOf(n))))
    remove.delete(image.id);
}
for (const id of remove) console.log(id);
