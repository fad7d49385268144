// Spellings of a path that a router may take for the path itself (percent-encoding, dot segments,
// double and trailing slashes, case, parameters): the tests of every listener send them all to a
// public port and expect none to reach an internal route.
/** Every way we know to spell `path` that a router might take for it. */
export function spellings(path: string): string[] {
  const [first = "", ...rest] = path.slice(1).split("/");
  const tail = rest.length ? `/${rest.join("/")}` : "";
  const encodeFirst = `%${first.charCodeAt(0).toString(16)}${first.slice(1)}`;
  return [
    path,
    `/${encodeFirst}${tail}`,
    `/${[...first].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join("")}${tail}`,
    `${path}/`,
    `/${path}`,
    `/./${path.slice(1)}`,
    `/x/..${path}`,
    `/%2e${path}`,
    `/x/%2e%2e${path}`,
    `${path}?x=1`,
    `${path};x`,
    path.toUpperCase(),
    `${path}%00`,
  ];
}
