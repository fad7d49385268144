// The embedding worker thread: loads the model (model-runner.ts) and answers embed requests one
// at a time, so the ONNX run — which blocks the thread it runs on for the whole batch — never
// holds the service's event loop. Protocol (worker-lane.ts is the other side):
//   out: {type:"ready", dimensions, threadId} once loaded, or {type:"failed", message} and exit;
//   in:  {type:"embed", id, texts}  ->  out: {type:"done", id, data (all vectors, flat), dims, batches}
//                                         or {type:"error", id, message};
//   in:  {type:"close"}: finish the run in progress, release the session, end the thread.
// Closing this way, never by terminate() in the middle of a run: onnxruntime-node aborts the
// whole process when its thread is torn down inside a native call.
import { parentPort, threadId, workerData } from "node:worker_threads";
import { EmbeddingModel, type ModelOptions } from "./model-runner.ts";

const port = parentPort;
if (!port) throw new Error("embed-worker.ts runs as a worker thread only");

type Request = { type: "embed"; id: number; texts: string[] } | { type: "close" };

const loading = EmbeddingModel.load(workerData as ModelOptions);
/** The requests in order, one at a time: each waits for the one before. */
let queue: Promise<unknown> = loading;

async function embed(model: EmbeddingModel, msg: { id: number; texts: string[] }): Promise<void> {
  try {
    const { vectors, batches } = await model.embed(msg.texts);
    const dims = model.dimensions;
    const data = new Float32Array(vectors.length * dims);
    vectors.forEach((v, i) => {
      data.set(v, i * dims);
    });
    port?.postMessage({ type: "done", id: msg.id, data, dims, batches }, [data.buffer]);
  } catch (err) {
    port?.postMessage({ type: "error", id: msg.id, message: (err as Error).message });
  }
}

port.on("message", (msg: Request) => {
  queue = queue.then(async () => {
    const model = await loading;
    if (msg.type === "embed") return embed(model, msg);
    await model.release();
    process.exit(0);
  });
});

loading.then(
  (model) => port.postMessage({ type: "ready", dimensions: model.dimensions, threadId }),
  (err: Error) => {
    port.postMessage({ type: "failed", message: err.message });
    process.exit(1);
  },
);
