// How a service process fills its ResourceView: from folders of YAML when it is given some
// (standalone: FileSource, reloaded on change), otherwise from the API server through a read-only
// list+watch of the kinds it serves (KUBECONFIG, an explicit kubeconfig file, or in-cluster).
import type { KindName } from "../api/kinds.ts";
import { loadKubeConfig } from "../kube/config.ts";
import { KubeHttp } from "../kube/http.ts";
import type { Logger } from "../logger.ts";
import type { Registry } from "../metrics.ts";
import { FileSource } from "./file-source.ts";
import { KubeSource } from "./kube-source.ts";
import type { ResourceView } from "./view.ts";

export interface ResourceSourceOptions {
  /** YAML folders (CAPSTAN_RESOURCES_DIR); none means the API server. */
  dirs: string[];
  /** The kinds the service reads from the API server. */
  kinds: KindName[];
  /** Watch one namespace; default all namespaces. */
  namespace?: string | undefined;
  /** A kubeconfig file to use instead of KUBECONFIG / in-cluster configuration. */
  kubeconfig?: string | undefined;
  /** Where the API client's request metrics go. */
  registry: Registry;
  logger: Logger;
}

/**
 * Starts feeding `view` and returns the function that stops it. Errors never stop the service:
 * a bad file keeps the last good state, a watch error serves the last state while it resumes.
 */
export function startResourceSource(view: ResourceView, opts: ResourceSourceOptions): () => void {
  const { logger } = opts;
  if (opts.dirs.length > 0) {
    const source = new FileSource(view, {
      dirs: opts.dirs,
      onError: (err) => logger.error({ err: err.message }, "resource files not reloaded; keeping the last good state"),
    });
    source.start();
    logger.info({ dirs: opts.dirs }, "resources read from files");
    return () => source.stop();
  }
  const kube = new KubeHttp(loadKubeConfig(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}), opts.registry);
  const source = new KubeSource(view, kube, {
    ...(opts.namespace ? { namespace: opts.namespace } : {}),
    kinds: opts.kinds,
    onError: (err, kind) => logger.warn({ err: err.message, kind }, "resource watch error; serving the last state"),
  });
  source.start().then(
    () => logger.info({ namespace: opts.namespace ?? "(all)" }, "resources synced from the API server"),
    (err: Error) => logger.error({ err: err.message }, "resource watch failed to start"),
  );
  return () => {
    source.stop();
    void kube.close();
  };
}
