// No function over 80 lines outside tests and generated code: a long function with bookkeeping is
// split into steps that each read top to bottom. The TypeScript parser finds every function
// (declarations, methods, arrows, constructors) in the product's sources.
// (The functions that were longer when the rule came in have all been split: there is no list of
// exceptions any more.)
import { globSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const MAX_FUNCTION_LINES = 80;
const SOURCE_ROOTS = ["services", "operator", "console", "scripts", "bench"];

/** Functions over the limit when the rule came in, as "path name" (see the header): all split now. */
/** Product sources: not tests (`*.test.ts`, fixtures), not installed packages, not generated code. */
function productFiles(root = "."): string[] {
  return globSync(
    SOURCE_ROOTS.map((dir) => `${dir}/**/*.{ts,tsx}`),
    {
      cwd: root,
      exclude: (path: string) => /(^|\/)(node_modules|dist|generated)$/.test(path) || /\.generated\.tsx?$/.test(path),
    },
  )
    .filter((f) => !/\.(test|fixture)\.tsx?$/.test(f) && !f.endsWith(".d.ts"))
    .sort();
}

/** Every function over the limit in `file`, as "path name" with its length. */
function longFunctions(file: string, root = "."): { id: string; lines: number }[] {
  const text = readFileSync(join(root, file), "utf8");
  const kind = file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found: { id: string; lines: number }[] = [];
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = lineOf(node.getStart(source));
      const lines = lineOf(node.getEnd()) - start + 1;
      if (lines > MAX_FUNCTION_LINES) {
        found.push({ id: `${file} ${nameOf(node as ts.FunctionLikeDeclaration, start)}`, lines });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A function's name: its own, the variable or property it is assigned to, else where it starts. */
function nameOf(fn: ts.FunctionLikeDeclaration, start: number): string {
  if (ts.isConstructorDeclaration(fn)) return "constructor";
  if (fn.name && ts.isIdentifier(fn.name)) return fn.name.text;
  const parent = fn.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && ts.isIdentifier(parent.name)) {
    return parent.name.text;
  }
  return `(function at line ${start})`;
}

describe("function length", () => {
  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const files = productFiles();
    expect(files).toContain("services/gateway/src/app.ts");
    expect(files.some((f) => f.endsWith(".test.ts"))).toBe(false);
    const long = files.flatMap((f) => longFunctions(f));
    expect(long.map((l) => `${l.id}: ${l.lines} lines`)).toEqual([]);
  });

  it("finds a long function of any form, and only in product sources", () => {
    const root = mkdtempSync(join(tmpdir(), "capstan-fn-length-"));
    try {
      const body = (n: number) => "  x++;\n".repeat(n);
      const put = (file: string, text: string) => {
        mkdirSync(join(root, file, ".."), { recursive: true });
        writeFileSync(join(root, file), text);
      };
      put(
        "services/a/src/a.ts",
        `let x = 0;\nexport function long() {\n${body(79)}}\nexport const ok = () => {\n${body(78)}};\n`,
      );
      put(
        "services/a/src/b.ts",
        `let x = 0;\nclass C {\n  constructor() {\n${body(80)}  }\n}\nexport const f = () => {\n${body(79)}};\n`,
      );
      put("services/a/src/a.test.ts", `export function t() {\n${body(200)}}\n`);
      const files = productFiles(root);
      expect(files).toEqual(["services/a/src/a.ts", "services/a/src/b.ts"]);
      expect(files.flatMap((f) => longFunctions(f, root))).toEqual([
        { id: "services/a/src/a.ts long", lines: 81 },
        { id: "services/a/src/b.ts constructor", lines: 82 },
        { id: "services/a/src/b.ts f", lines: 81 },
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
