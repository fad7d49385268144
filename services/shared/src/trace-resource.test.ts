import { describe, expect, it } from "vitest";
import { baseResourceAttributes, k8sResourceAttributes } from "./trace-resource.ts";

describe("the Resource's Kubernetes attributes", () => {
  it("reads the downward API's variables and makes service.instance.id from namespace, pod and container", () => {
    expect(
      k8sResourceAttributes({
        K8S_NAMESPACE_NAME: "capstan",
        K8S_POD_NAME: "capstan-gateway-7d9f-abcde",
        K8S_POD_UID: "0f1e2d3c-0000-4000-8000-000000000001",
        K8S_NODE_NAME: "node-1",
        K8S_DEPLOYMENT_NAME: "capstan-gateway",
        K8S_CONTAINER_NAME: "gateway",
      }),
    ).toEqual({
      "k8s.namespace.name": "capstan",
      "k8s.pod.name": "capstan-gateway-7d9f-abcde",
      "k8s.pod.uid": "0f1e2d3c-0000-4000-8000-000000000001",
      "k8s.node.name": "node-1",
      "k8s.deployment.name": "capstan-gateway",
      "k8s.container.name": "gateway",
      "service.instance.id": "capstan.capstan-gateway-7d9f-abcde.gateway",
    });
  });

  it("sets nothing outside a pod, and no instance id without the pod's name", () => {
    expect(k8sResourceAttributes({})).toEqual({});
    expect(k8sResourceAttributes({ K8S_NAMESPACE_NAME: "capstan", K8S_CONTAINER_NAME: " " })).toEqual({
      "k8s.namespace.name": "capstan",
    });
    expect(baseResourceAttributes("capstan-search", {})).toEqual({ "service.name": "capstan-search" });
  });
});
