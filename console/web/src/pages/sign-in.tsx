// Sign-in with a Kubernetes bearer token. The token goes to the console once, in a POST body; the
// browser keeps only the HTTP-only session cookie the console sets.
import { useState } from "preact/hooks";
import { type SignInRequest, sessionInfoSchema } from "../../../src/wire.ts";
import { type ApiError, post, type SessionInfo } from "../api.ts";
import { ErrorText, Field } from "../ui.tsx";

export function SignIn({ onSignedIn }: { onSignedIn: (s: SessionInfo) => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <h1>Capstan console</h1>
      <p>
        Sign in with a Kubernetes token: a ServiceAccount token (<code>kubectl create token NAME</code>) or an OIDC id
        token your API server accepts. What you may see and do is what Kubernetes RBAC grants that identity.
      </p>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          try {
            const s = await post("/api/session", sessionInfoSchema, { token } satisfies SignInRequest);
            setToken("");
            onSignedIn(s);
          } catch (err) {
            setError((err as ApiError).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <Field label="Token" id="token" hint="Kept by the console for this session only, never in the browser.">
          <textarea
            id="token"
            name="token"
            rows={4}
            required
            autocomplete="off"
            spellcheck={false}
            aria-describedby="token-hint"
            value={token}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <ErrorText error={error} />
    </main>
  );
}
