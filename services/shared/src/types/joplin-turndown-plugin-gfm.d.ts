// @joplin/turndown-plugin-gfm ships no types: the one plugin the shared HTML converter uses (the
// scraper declares the others it uses in its own src/types).
declare module "@joplin/turndown-plugin-gfm" {
  export const gfm: (service: import("turndown")) => void;
}
