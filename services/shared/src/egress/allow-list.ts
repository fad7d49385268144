// The allow-list as a config field: hosts, `*.suffix`, IPs or CIDRs, each optionally `:port`
// (the scraper's ALLOWED_HOSTS syntax), checked when the config is parsed so a bad entry stops
// start-up naming itself rather than failing the first call.
import { z } from "zod";
import { allowListProblem } from "./policy.ts";

export const egressAllowList = z
  .array(z.string().min(1))
  .default([])
  .superRefine((entries, ctx) => {
    const problem = allowListProblem(entries);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
