// The egress address policy and guard (@capstan/shared/egress): see guard.ts.

export * from "./allow-list.ts";
export * from "./guard.ts";
export * from "./policy.ts";
