export * from "./file-source.ts";
export * from "./kube-source.ts";
export * from "./source.ts";
export * from "./view.ts";
