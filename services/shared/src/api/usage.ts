// The rows of the gateway's usage API (GET /internal/v1/usage on its internal port), as the
// gateway writes them and the console reads and shows them: tokens and requests of one channel,
// agent, upstream and model in one UTC hour, with a cost where the Agent prices the model.
export interface UsageRow {
  /** namespace/name on the gateway's API; the console shows the name only. */
  channel: string;
  /** The UTC hour, e.g. 2027-03-31T13. */
  hour: string;
  agent: string;
  upstream: string;
  model: string;
  prompt: number;
  completion: number;
  requests: number;
  /** From the Agent's spec.prices, per million tokens; absent when the model has no price. */
  cost?: { amount: number; currency: string };
}
