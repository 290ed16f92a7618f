// A lint plugin for scripts/sizes.mjs: reports every function (declaration, expression,
// arrow, method) longer than 80 lines, with its name and length, through deno lint's AST.
const LIMIT = 80;

type Fn = Deno.lint.FunctionDeclaration | Deno.lint.FunctionExpression | Deno.lint.ArrowFunctionExpression;

/** The name a reader would search for: the function's own, or the binding, method or property it sits in. */
function nameOf(node: Fn): string {
  if ((node.type === "FunctionDeclaration" || node.type === "FunctionExpression") && node.id) return node.id.name;
  const parent = node.parent;
  if (parent?.type === "VariableDeclarator" && parent.id.type === "Identifier") return parent.id.name;
  if ((parent?.type === "MethodDefinition" || parent?.type === "Property") && parent.key.type === "Identifier") {
    return parent.key.name;
  }
  if (parent?.type === "PropertyDefinition" && parent.key.type === "Identifier") return parent.key.name;
  return "(anonymous)";
}

const plugin: Deno.lint.Plugin = {
  name: "sizes",
  rules: {
    "long-function": {
      create(context) {
        const text = context.sourceCode.text;
        const lineOf = (offset: number) => text.slice(0, offset).split("\n").length;
        const check = (node: Fn) => {
          const lines = lineOf(node.range[1]) - lineOf(node.range[0]) + 1;
          if (lines > LIMIT) context.report({ node, message: `${nameOf(node)} ${lines}` });
        };
        return { FunctionDeclaration: check, FunctionExpression: check, ArrowFunctionExpression: check };
      },
    },
  },
};
export default plugin;
