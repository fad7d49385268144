// The console's page: sign-in, then a navigation bar and one page per hash route. The namespace
// the pages act in is chosen in the header; RBAC (asked through /permissions) decides what shows.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { permissionsSchema, sessionInfoSchema, signedOutSchema } from "../../src/wire.ts";
import {
  del,
  get,
  getWhileCurrent,
  nsPath,
  type Permissions,
  type SessionInfo,
  setCsrfToken,
  whenSignedOut,
} from "./api.ts";
import { AgentsPage } from "./pages/agents.tsx";
import { ChannelPage } from "./pages/channel.tsx";
import { ChannelsPage } from "./pages/channels.tsx";
import { KnowledgeList, KnowledgePage } from "./pages/knowledge.tsx";
import { SearchKeysPage } from "./pages/search-keys.tsx";
import { SignIn } from "./pages/sign-in.tsx";
import { UsagePage } from "./pages/usage.tsx";
import { ErrorText } from "./ui.tsx";

const PAGES = [
  ["channels", "Access channels"],
  ["search-keys", "Search keys"],
  ["knowledge", "Knowledge bases"],
  ["agents", "Agents and scrapers"],
  ["usage", "Usage"],
] as const;

function useHash(): string {
  const [hash, setHash] = useState(location.hash.slice(1) || "/channels");
  useEffect(() => {
    const on = () => setHash(location.hash.slice(1) || "/channels");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function Page({ route, ns, can }: { route: string; ns: string; can: Permissions }) {
  const [, page, name] = route.split("/");
  if (page === "channels" && name) return <ChannelPage ns={ns} name={decodeURIComponent(name)} can={can} />;
  if (page === "channels") return <ChannelsPage ns={ns} can={can} />;
  if (page === "search-keys") return <SearchKeysPage ns={ns} can={can} />;
  if (page === "knowledge" && name) return <KnowledgePage ns={ns} name={decodeURIComponent(name)} can={can} />;
  if (page === "knowledge") return <KnowledgeList ns={ns} can={can} />;
  if (page === "agents") return <AgentsPage ns={ns} />;
  if (page === "usage") return <UsagePage ns={ns} />;
  const lazy = PAGES.find(([p]) => p === page);
  return <p>{lazy ? `${lazy[1]}: coming with the next release of the console.` : "No such page."}</p>;
}

function App() {
  const [session, setSession] = useState<SessionInfo | null | undefined>(undefined);
  const [ns, setNs] = useState("");
  const [nsDraft, setNsDraft] = useState("");
  const [can, setCan] = useState<Permissions | undefined>();
  const [error, setError] = useState<string>();
  const route = useHash();

  const signedIn = (s: SessionInfo) => {
    setCsrfToken(s.csrfToken);
    setSession(s);
    const start = sessionStorage.getItem("capstan.ns") || s.defaultNamespace;
    setNs(start);
    setNsDraft(start);
  };
  useEffect(() => {
    whenSignedOut(() => setSession(null));
    get("/api/session", sessionInfoSchema).then(signedIn, () => setSession(null));
  }, []);
  useEffect(() => {
    if (!session || !ns) return;
    sessionStorage.setItem("capstan.ns", ns);
    setCan(undefined);
    return getWhileCurrent(nsPath(ns, "permissions"), permissionsSchema, setCan, (e) => setError(e.message));
  }, [session, ns]);

  if (session === undefined) return <p>Loading…</p>;
  if (session === null) return <SignIn onSignedIn={signedIn} />;
  return (
    <div class="shell">
      <header>
        <strong>Capstan console</strong>
        <nav aria-label="Pages">
          {PAGES.map(([p, label]) => (
            <a key={p} href={`#/${p}`} aria-current={route.startsWith(`/${p}`) ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <form
          class="ns"
          onSubmit={(e) => {
            e.preventDefault();
            setNs(nsDraft.trim());
          }}
        >
          <label for="namespace">Namespace</label>
          <input id="namespace" value={nsDraft} onInput={(e) => setNsDraft(e.currentTarget.value)} />
          <button type="submit">Switch</button>
        </form>
        <span class="user" title={session.user.groups.join(", ")}>
          {session.user.username}
        </span>
        <button
          type="button"
          onClick={async () => {
            await del("/api/session", signedOutSchema).catch(() => undefined);
            setSession(null);
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <ErrorText error={error} />
        {can ? <Page route={route} ns={ns} can={can} /> : <p>Loading permissions…</p>}
      </main>
    </div>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
