// The one helper behind every package's error registry (gateway, search, scraper, operator: each
// keeps its own `errors.ts` with its codes, statuses and body shape). A registry entry's message is
// a template with {name} placeholders, filled here the same way everywhere.

/** What fills a template: values by placeholder name, or a list taken in order of appearance. */
export type MessageParams = Readonly<Record<string, string | number>> | ReadonlyArray<string | number>;

const PLACEHOLDER = /\{(\w+)\}/g;

/**
 * Fills the {name} placeholders of a registry message. With a list, the n-th placeholder takes the
 * n-th value (registries whose call sites pass arguments positionally). A missing value leaves "".
 */
export function renderMessage(template: string, params: MessageParams = {}): string {
  if (Array.isArray(params)) {
    let i = 0;
    return template.replace(PLACEHOLDER, () => String(params[i++] ?? ""));
  }
  const named = params as Readonly<Record<string, string | number>>;
  return template.replace(PLACEHOLDER, (_m, name: string) => String(named[name] ?? ""));
}

/** Declares a registry (code → definition with a message template), keeping its literal types. */
export function defineErrors<const T extends Record<string, { message: string }>>(registry: T): T {
  return registry;
}
