// Synthetic but natural-language passages and questions for the search benchmark: sentences
// built from topic vocabularies, so embeddings form realistic topical clusters.

const TOPICS: [string, string[], string[]][] = [
  [
    "the billing system",
    ["invoices", "refunds", "payment cards", "tax rates", "credit notes"],
    ["is reconciled nightly", "fails when the card expires", "needs manager approval", "is exported to accounting"],
  ],
  [
    "the mobile app",
    ["push notifications", "offline mode", "dark theme", "login screen", "crash reports"],
    ["was redesigned last spring", "drains the battery", "syncs every hour", "supports tablets"],
  ],
  [
    "the data warehouse",
    ["nightly loads", "partitioned tables", "query costs", "retention rules", "dashboards"],
    ["is refreshed at midnight", "keeps seven years of history", "is queried by analysts", "runs on columnar storage"],
  ],
  [
    "the hiring process",
    ["phone screens", "coding interviews", "reference checks", "offer letters", "onboarding"],
    ["takes about three weeks", "involves two panels", "is tracked in the ATS", "ends with a debrief"],
  ],
  [
    "the coffee machine",
    ["espresso shots", "milk frother", "descaling", "water tank", "bean grinder"],
    ["needs cleaning weekly", "is on the third floor", "makes a loud noise", "was replaced in March"],
  ],
  [
    "the solar panels",
    ["inverters", "battery storage", "roof mounting", "grid feed-in", "panel efficiency"],
    [
      "produce most power at noon",
      "degrade slowly over decades",
      "need a clear southern view",
      "are monitored remotely",
    ],
  ],
  [
    "the football team",
    ["training sessions", "match tactics", "injured players", "transfer budget", "youth academy"],
    ["won the league last season", "plays on Saturdays", "hired a new coach", "struggles away from home"],
  ],
  [
    "the garden",
    ["tomato plants", "compost heap", "rain barrels", "rose bushes", "lawn mowing"],
    ["needs watering in summer", "attracts many bees", "is pruned in autumn", "was planted by grandparents"],
  ],
  [
    "the railway network",
    ["night trains", "signal failures", "ticket prices", "high-speed lines", "station upgrades"],
    ["is electrified in the north", "was delayed by storms", "carries freight at night", "connects the capital"],
  ],
  [
    "the astronomy club",
    ["telescope nights", "meteor showers", "star charts", "lunar eclipses", "planet spotting"],
    ["meets on clear Fridays", "owns a large reflector", "visits dark-sky parks", "welcomes beginners"],
  ],
  [
    "the security team",
    ["phishing tests", "access reviews", "incident response", "password policies", "firewall rules"],
    ["audits accounts quarterly", "runs drills every month", "reports to the board", "blocks suspicious logins"],
  ],
  [
    "the bakery",
    ["sourdough loaves", "croissants", "rye bread", "wedding cakes", "gluten-free rolls"],
    ["opens at six", "uses a wood oven", "sells out by noon", "sources local flour"],
  ],
  [
    "the hospital ward",
    ["night shifts", "patient charts", "medication rounds", "visiting hours", "discharge plans"],
    [
      "is staffed by twelve nurses",
      "handles cardiac patients",
      "was renovated recently",
      "has a strict hygiene policy",
    ],
  ],
  [
    "the hiking trail",
    ["mountain passes", "river crossings", "trail markers", "camping spots", "wildlife sightings"],
    ["takes five days", "is closed in winter", "climbs above the tree line", "passes three lakes"],
  ],
  [
    "the compiler",
    ["type checking", "code generation", "optimisation passes", "error messages", "incremental builds"],
    ["targets WebAssembly", "was rewritten in Rust", "caches intermediate results", "reports warnings as errors"],
  ],
  [
    "the city library",
    ["rare manuscripts", "children's corner", "study rooms", "e-book loans", "reading groups"],
    ["opens late on Thursdays", "digitised its archive", "hosts author talks", "charges no late fees"],
  ],
];

function pick<T>(xs: T[], r: () => number): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

/** Deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function passages(n: number, seed = 1): string[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const [subject, things, facts] = TOPICS[i % TOPICS.length] as [string, string[], string[]];
    const sentences = Array.from({ length: 3 }, () => `In ${subject}, the ${pick(things, r)} ${pick(facts, r)}.`);
    return `${sentences.join(" ")} Note ${i}: ${pick(things, r)} and ${pick(things, r)} are reviewed together.`;
  });
}

export function questions(n: number, seed = 2): string[] {
  const r = rng(seed);
  const forms = ["What do we know about", "Tell me about", "How does it work with", "Any notes on", "Explain"];
  return Array.from({ length: n }, (_, i) => {
    const [subject, things] = TOPICS[Math.floor(r() * TOPICS.length)] as [string, string[], string[]];
    return `${pick(forms, r)} ${pick(things, r)} in ${subject}? (${i})`;
  });
}

/**
 * Ingestion-like chunks of varied length: documents of 2–12 passages cut by the service's own
 * chunker (800 characters, overlap 100, as a KnowledgeBase's default), so a batch mixes short
 * tails with full chunks (~40–190 word pieces) the way a real ingestion does.
 */
export function chunks(n: number, chunkText: (text: string) => string[], seed = 3): string[] {
  const r = rng(seed);
  const pool = passages(Math.max(64, Math.ceil(n / 2)), seed);
  const out: string[] = [];
  for (let doc = 0; out.length < n; doc++) {
    const size = 2 + Math.floor(r() * 11);
    const text = Array.from({ length: size }, () => pick(pool, r)).join("\n\n");
    for (const c of chunkText(`Document ${doc}.\n\n${text}`)) if (out.length < n) out.push(c);
  }
  return out;
}
