// The embedding worker thread: loads the model (model-runner.ts) and answers embed requests one
// at a time, so the ONNX run — which blocks the thread it runs on for the whole batch — never
// holds the service's event loop. Protocol (worker-lane.ts is the other side):
//   out: {type:"ready", dimensions, threadId} once loaded, or {type:"failed", message} and exit;
//   in:  {id, texts}  ->  out: {type:"done", id, data (all vectors, flat), dims, batches}
//                          or {type:"error", id, message}.
import { parentPort, threadId, workerData } from "node:worker_threads";
import { EmbeddingModel, type ModelOptions } from "./model-runner.ts";

const port = parentPort;
if (!port) throw new Error("embed-worker.ts runs as a worker thread only");

try {
  const model = await EmbeddingModel.load(workerData as ModelOptions);
  port.on("message", async (msg: { id: number; texts: string[] }) => {
    try {
      const { vectors, batches } = await model.embed(msg.texts);
      const dims = model.dimensions;
      const data = new Float32Array(vectors.length * dims);
      vectors.forEach((v, i) => {
        data.set(v, i * dims);
      });
      port.postMessage({ type: "done", id: msg.id, data, dims, batches }, [data.buffer]);
    } catch (err) {
      port.postMessage({ type: "error", id: msg.id, message: (err as Error).message });
    }
  });
  port.postMessage({ type: "ready", dimensions: model.dimensions, threadId });
} catch (err) {
  port.postMessage({ type: "failed", message: (err as Error).message });
  process.exit(1);
}
