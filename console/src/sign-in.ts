// How a token signs in. Against a cluster: the API server says who the token belongs to
// (SelfSubjectReview) and every later call carries that token (pass-through). In standalone mode
// (no cluster): the local admin token the launcher printed at start, compared in constant time,
// and the YAML folder as the API (local-api.ts).
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { isStatus, type KubeConfig } from "@capstan/shared/kube";
import type { ConsoleContext } from "./context.ts";
import { ConsoleError, errors } from "./errors.ts";
import { LocalApi, type LocalStore } from "./local-api.ts";
import { kubeAsUser, UserApi } from "./user-api.ts";

export function clusterSignIn(cluster: KubeConfig): ConsoleContext["signIn"] {
  return async (token) => {
    const api = new UserApi(kubeAsUser(cluster, token));
    try {
      return { user: await api.whoAmI(), api };
    } catch (err) {
      await api.close();
      if (isStatus(err, 401)) throw errors.tokenRejected("it is unknown, expired or revoked");
      throw err;
    }
  };
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Standalone mode: the admin token in `adminTokenFile` (read at each sign-in, so a new one applies at once). */
export function localSignIn(store: LocalStore, adminTokenFile: string): ConsoleContext["signIn"] {
  return async (token) => {
    const expected = readFileSync(adminTokenFile, "utf8").trim();
    // Equal-length digests: the comparison takes the same time whatever the token's length.
    if (!expected || !timingSafeEqual(digest(token), digest(expected))) {
      throw new ConsoleError(401, "TokenRejected", "this is not the admin token `npm start` printed at start");
    }
    const api = new LocalApi(store);
    return { user: await api.whoAmI(), api };
  };
}
