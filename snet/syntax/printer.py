"""AST back to S-Net text: the pretty-printer.

:func:`format_program` writes a program that parses back to an equal AST
(spans aside).  Parentheses are added exactly where the grammar needs them
to keep the tree's shape:

* connect expressions by the precedence table of §3.3: a ``|`` chain inside a
  ``|`` branch, any parallel inside a ``||`` branch, any ``..`` or parallel
  inside a ``..`` stage or under a postfix combinator;
* tag expressions by the table of §3.4, left-associative binaries and a
  right-associative ``?:``;
* **every** ``>`` comparison is parenthesised, which is always enough for
  the ``>`` rule (the first ``>`` not in parentheses closes ``< ... >``);
* ``! !x`` is written with a space, since ``!!`` is one token.

Layout: one definition per line at the top level, local definitions of a net
indented by two spaces.
"""

from __future__ import annotations

from snet.syntax import ast
from snet.tagexpr import Binary, Cond, Const, Ref, Unary

INDENT = "  "

# Tag-expression precedence levels (§3.4), tightest = 1.
_LEVEL = {"min": 3, "max": 3, "*": 4, "/": 4, "%": 4, "+": 5, "-": 5, "<": 6, "<=": 6, ">": 6, ">=": 6,
          "==": 7, "!=": 7, "&&": 8, "||": 9}


def format_program(program: ast.Program) -> str:
    """The S-Net text of `program`, ending in a newline."""
    lines: list[str] = []
    for d in program.definitions:
        lines.extend(format_definition(d, 0))
    return "\n".join(lines) + ("\n" if lines else "")


def format_definition(d, depth: int) -> list[str]:
    pad = INDENT * depth
    if isinstance(d, ast.Metadata):
        return [pad + format_metadata(d)]
    if isinstance(d, ast.BoxDecl):
        inputs = "" if d.inputs is None else format_tuple(d.inputs) + " "
        outs = " | ".join(format_tuple(v) for v in d.outputs)
        if d.inline is not None:
            return [f"{pad}box {d.name} ({inputs}-> {outs}) {{<<< {d.inline.language} |{d.inline.code}>>>}}"]
        return [f"{pad}box {d.name} ({inputs}-> {outs});"]
    if isinstance(d, ast.TypeDef):
        return [f"{pad}type {d.name} = {format_type(d.type)};"]
    if isinstance(d, ast.TypesigDef):
        return [f"{pad}typesig {d.name} = {format_signature(d.signature)};"]
    if isinstance(d, ast.NetDef):
        head = f"{pad}net {d.name}"
        if d.signature is not None:
            head += f" ({format_signature(d.signature)})"
        if d.body is None:
            return [head + ";"]
        lines = []
        if d.definitions is not None:
            if d.definitions:
                lines.append(head + " {")
                for inner in d.definitions:
                    lines.extend(format_definition(inner, depth + 1))
                lines.append(f"{pad}}} connect {format_expr(d.body)};")
            else:
                lines.append(f"{head} {{ }} connect {format_expr(d.body)};")
        else:
            lines.append(f"{head} connect {format_expr(d.body)};")
        return lines
    raise TypeError(f"not a definition: {d!r}")


# ---- labels, types, signatures

def format_labels(labels) -> str:
    return ", ".join(label.text for label in labels)


def format_tuple(labels) -> str:
    return f"({format_labels(labels)})"


def format_record_type(rt: ast.RecordType) -> str:
    return "{" + format_labels(rt.labels) + "}"


def format_type(t: ast.TypeExpr) -> str:
    return " | ".join(format_record_type(a) if isinstance(a, ast.RecordType) else a.name for a in t.atoms)


def format_signature(sig: ast.Signature) -> str:
    items = []
    for item in sig.items:
        if isinstance(item, ast.TypesigRef):
            items.append(item.name)
        else:
            out = "..." if item.output is None else format_type(item.output)
            items.append(f"{format_type(item.input)} -> {out}")
    return ", ".join(items)


# ---- metadata

def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def format_element(e: ast.MetaElement) -> str:
    attrs = "".join(f' {k}="{_escape(v)}"' for k, v in e.attributes)
    if e.children:
        return f"<{e.key}{attrs}>" + " ".join(format_element(c) for c in e.children) + f"</{e.key}>"
    if e.text:
        return f"<{e.key}{attrs}>{_escape(e.text)}</{e.key}>"
    return f"<{e.key}{attrs}/>"


def format_metadata(m: ast.Metadata) -> str:
    return "<metadata>" + " ".join(format_element(e) for e in m.elements) + "</metadata>"


# ---- connect expressions

def _expr_level(e) -> int:
    if isinstance(e, ast.Parallel):
        return 3 if e.deterministic else 4
    if isinstance(e, ast.Serial):
        return 2
    if isinstance(e, (ast.Star, ast.Split, ast.Feedback, ast.Placement)):
        return 1
    return 0


def _wrap(e, limit: int) -> str:
    """`e` as an operand that must bind tighter than level `limit`."""
    text = format_expr(e)
    return f"({text})" if _expr_level(e) >= limit else text


def format_guarded(g: ast.Guarded) -> str:
    text = format_record_type(g.pattern)
    if g.guard is not None:
        text += f" if <{format_texpr(g.guard)}>"
    return text


def format_patterns(patterns) -> str:
    return ", ".join(format_guarded(g) for g in patterns)


def format_expr(e) -> str:
    """A connect expression."""
    if isinstance(e, ast.NameRef):
        return e.name
    if isinstance(e, ast.Identity):
        return "[]"
    if isinstance(e, ast.Filter):
        return format_filter(e)
    if isinstance(e, ast.SyncCell):
        return "[| " + format_patterns(e.patterns) + " |]"
    if isinstance(e, ast.Parallel):
        op, limit = (" || ", 3) if e.deterministic else (" | ", 4)
        return op.join(_wrap(b, limit) for b in e.branches)
    if isinstance(e, ast.Serial):
        return " .. ".join(_wrap(s, 2) for s in e.stages)
    if isinstance(e, ast.Star):
        return f"{_wrap(e.operand, 2)} {'**' if e.deterministic else '*'} {format_patterns(e.patterns)}"
    if isinstance(e, ast.Split):
        op = ("!!" if e.deterministic else "!") + ("@" if e.placed else "")
        text = f"{_wrap(e.operand, 2)} {op} {e.tag.text}"
        if e.hi_tag is not None:
            text += f" : {e.hi_tag.text}"
        return text
    if isinstance(e, ast.Feedback):
        return f"{_wrap(e.operand, 2)} \\ {format_patterns(e.patterns)}"
    if isinstance(e, ast.Placement):
        return f"{_wrap(e.operand, 2)} @ {e.machine}"
    raise TypeError(f"not a connect expression: {e!r}")


def format_out_item(item: ast.OutItem) -> str:
    if item.expr is not None:
        return f"{item.label[:-1]}={format_texpr(item.expr)}>"
    if item.label.startswith("<"):
        return item.label
    return item.label if item.source == item.label else f"{item.label}={item.source}"


def format_outputs(outputs) -> str:
    return "; ".join("{" + ", ".join(format_out_item(i) for i in r.items) + "}" for r in outputs)


def format_filter(f: ast.Filter) -> str:
    parts = []
    for clause in f.clauses:
        outs = format_outputs(clause.outputs)
        if clause.guard is not None:
            parts.append(f"if <{format_texpr(clause.guard)}> then {outs} else ".replace("then  else", "then else"))
        else:
            parts.append(outs)
    action = "".join(parts).rstrip()
    return f"[{format_record_type(f.pattern)} -> {action}]"


# ---- tag expressions

def _texpr_level(e) -> int:
    if isinstance(e, Cond):
        return 10
    if isinstance(e, Binary):
        return 1 if e.op == ">" else _LEVEL[e.op]  # ">" is always printed in parentheses
    if isinstance(e, Unary):
        return 2
    return 1


def _operand(e, parens: bool) -> str:
    text = format_texpr(e)
    return f"({text})" if parens else text


def format_texpr(e) -> str:
    """A tag expression, safe to put directly inside ``< ... >``."""
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Ref):
        return e.label[1:-1]  # "<t>" -> "t", "<#b>" -> "#b"
    if isinstance(e, Unary):
        inner = _operand(e.operand, _texpr_level(e.operand) > 2)
        if e.op == "abs":
            return f"abs {inner}"
        if e.op == "!" and inner.startswith("!"):
            return f"! {inner}"
        return e.op + inner
    if isinstance(e, Binary):
        level = _LEVEL[e.op]
        left = _operand(e.left, _texpr_level(e.left) > level)
        right = _operand(e.right, _texpr_level(e.right) >= level)
        text = f"{left} {e.op} {right}"
        return f"({text})" if e.op == ">" else text
    if isinstance(e, Cond):
        test = _operand(e.test, _texpr_level(e.test) >= 10)
        return f"{test} ? {format_texpr(e.then)} : {format_texpr(e.otherwise)}"
    raise TypeError(f"not a tag expression: {e!r}")
