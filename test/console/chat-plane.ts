// The chat side of the data plane the console's browser tests drive: the test ground's API server
// (CRDs installed, a fresh namespace), a fake provider speaking the OpenAI protocol, a real gateway
// watching the namespace's channels and agents, a real operator (channels' status.endpoint is that
// gateway), and the Agent "echo" Ready.
import { KubeSource, ResourceView } from "@capstan/shared/resource-view";
import { inject } from "vitest";
import type { Operator } from "../../operator/src/manager.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../gateway/fake-openai.ts";
import { type RunningGateway, startGateway } from "../gateway/helpers.ts";
import { ensureNamespace, harnessKubeClient, installCrds, type TestKube } from "../ground/kube-client.ts";
import { CAP, create, startOperatorFor, whenCondition } from "../operator/helpers.ts";

export interface ChatPlane {
  admin: TestKube;
  fake: FakeOpenAI;
  gateway: RunningGateway;
  operator: Operator;
  close(): Promise<void>;
}

export async function startChatPlane(ns: string): Promise<ChatPlane> {
  const admin = harnessKubeClient();
  await installCrds(admin);
  await ensureNamespace(admin, ns);
  const fake = await startFakeOpenAI();
  const view = new ResourceView();
  const source = new KubeSource(view, admin, { namespace: ns, kinds: ["AccessChannel", "Agent"] });
  await source.start();
  const gateway = await startGateway({}, { view });
  const operator = startOperatorFor(inject("kubeconfig"), ns, { gateway: { publicUrl: gateway.url } });
  await operator.start();
  await create(admin, {
    apiVersion: CAP,
    kind: "Agent",
    metadata: { name: "echo", namespace: ns },
    spec: { provider: { baseURL: fake.baseURL, model: "echo", maxRetries: 0 } },
  });
  await whenCondition(admin, "Agent", ns, "echo", "Ready", "True");
  return {
    admin,
    fake,
    gateway,
    operator,
    close: async () => {
      await gateway.close();
      source.stop();
      await operator.stop();
      await fake.close();
    },
  };
}
