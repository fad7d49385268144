// HTML to Markdown, the platform's one converter (see markdown.ts): the scraper's pages and search's
// uploaded HTML documents.
export { cleanHtml } from "./clean.ts";
export { languageOf } from "./code-blocks.ts";
export { documentToMarkdown, htmlTitle, htmlToMarkdown } from "./markdown.ts";
