// @joplin/turndown-plugin-gfm ships no types: the plugins the HTML converter (documents/html/) uses.
declare module "@joplin/turndown-plugin-gfm" {
  type Plugin = (service: import("turndown")) => void;
  export const strikethrough: Plugin;
  export const taskListItems: Plugin;
}
