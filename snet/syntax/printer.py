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

Layout (the canonical layout of ``snet fmt``, see :mod:`snet.syntax.formatter`):
one definition per line, local definitions of a net indented by two spaces
between a ``{`` and a ``}`` on lines of their own, then ``connect``.  The
names of consecutive box declarations, and of consecutive nets without
local definitions, are padded to one width, so that their signatures and
``connect`` line up.  A connect expression that does not fit in
:data:`WIDTH` columns is broken (:mod:`snet.syntax.layout`): after
``connect`` first, then before each ``..``, ``|`` and postfix operator of the
combinators that do not fit, and before each ``else`` of a filter.

Comments, blank lines between definitions and metadata blocks as written
come in a :class:`~snet.syntax.comments.BlockTrivia`; without one the
program is printed bare.
"""

from __future__ import annotations

from snet.syntax import ast
from snet.syntax.comments import BlockTrivia, DefinitionTrivia, reindent
from snet.syntax.layout import align, cat, flat, group, line, nest, render, text
from snet.tagexpr import Binary, Cond, Const, Ref, Unary

INDENT = "  "
WIDTH = 100  # columns a connect expression is broken to fit in
TRAILING = "  "  # between a definition and a comment on its last line

# Tag-expression precedence levels (§3.4), tightest = 1.
_LEVEL = {"min": 3, "max": 3, "*": 4, "/": 4, "%": 4, "+": 5, "-": 5, "<": 6, "<=": 6, ">": 6, ">=": 6,
          "==": 7, "!=": 7, "&&": 8, "||": 9}


def format_program(program: ast.Program, trivia: BlockTrivia | None = None) -> str:
    """The S-Net text of `program`, ending in a newline (with `trivia`, its comments)."""
    lines = format_block(program.definitions, trivia, 0)
    return "\n".join(lines) + ("\n" if lines else "")


def format_block(definitions, trivia: BlockTrivia | None, depth: int) -> list[str]:
    """The lines of a list of definitions at `depth`, comments and blank lines included."""
    if trivia is None:
        trivia = BlockTrivia.bare(len(definitions))
    pad = INDENT * depth
    widths = _name_widths(definitions, trivia.definitions)
    lines: list[str] = []
    for d, t, width in zip(definitions, trivia.definitions, widths):
        for c in t.before:
            if c.blank_before:
                lines.append("")
            lines.extend(reindent(c.text, pad, c.column))
        if t.blank_before:
            lines.append("")
        for c in t.hoisted:
            lines.extend(reindent(c.text, pad, c.column))
        body = format_definition(d, depth, t, width)
        body[-1] += _trailing(t.trailing)
        lines.extend(body)
    for c in trivia.end:
        if c.blank_before:
            lines.append("")
        lines.extend(reindent(c.text, pad, c.column))
    while lines and not lines[0]:
        del lines[0]
    return lines


def _kind(d) -> str | None:
    """What lines up with what: box declarations, and nets without local definitions."""
    if isinstance(d, ast.BoxDecl):
        return "box"
    if isinstance(d, ast.NetDef) and d.definitions is None and d.body is not None:
        return "net"
    return None


def _name_widths(definitions, trivia) -> list[int]:
    """The width each definition's name is padded to: runs of one kind, unbroken by a blank line."""
    widths = [0] * len(definitions)
    run: list[int] = []

    def close() -> None:
        if len(run) > 1:
            width = max(len(definitions[i].name) for i in run)
            for i in run:
                widths[i] = width
        run.clear()

    for i, (d, t) in enumerate(zip(definitions, trivia)):
        kind = _kind(d)
        if not run or kind is None or kind != _kind(definitions[run[0]]) or t.blank_before \
                or any(c.blank_before for c in t.before):
            close()
        if kind is not None:
            run.append(i)
    close()
    return widths


def format_definition(d, depth: int, trivia: DefinitionTrivia | None = None, name_width: int = 0) -> list[str]:
    """The lines of one definition (its name padded to `name_width`)."""
    pad = INDENT * depth
    if isinstance(d, ast.Metadata):
        if trivia is not None and trivia.verbatim is not None:
            return reindent(trivia.verbatim, pad, trivia.verbatim_column)
        return [pad + format_metadata(d)]
    name = d.name.ljust(name_width)
    if isinstance(d, ast.BoxDecl):
        inputs = "" if d.inputs is None else format_tuple(d.inputs) + " "
        outs = " | ".join(format_tuple(v) for v in d.outputs)
        if d.inline is not None:
            code = trivia.verbatim if trivia is not None and trivia.verbatim is not None else \
                f"{{<<< {d.inline.language} |{d.inline.code}>>>}}"
            return f"{pad}box {name} ({inputs}-> {outs}) {code}".split("\n")
        return [f"{pad}box {name} ({inputs}-> {outs});"]
    if isinstance(d, ast.TypeDef):
        return [f"{pad}type {d.name} = {format_type(d.type)};"]
    if isinstance(d, ast.TypesigDef):
        return [f"{pad}typesig {d.name} = {format_signature(d.signature)};"]
    if isinstance(d, ast.NetDef):
        return _format_net(d, depth, trivia, name)
    raise TypeError(f"not a definition: {d!r}")


def _trailing(comments: list[str]) -> str:
    return TRAILING + " ".join(comments) if comments else ""


def _format_net(d: ast.NetDef, depth: int, trivia: DefinitionTrivia | None, name: str) -> list[str]:
    """A net on one line (``net n connect e;``, broken only to fit), or with braces on lines of their own."""
    pad = INDENT * depth
    head = f"{pad}net {name}"
    if d.signature is not None:
        head += f" ({format_signature(d.signature)})"
    if d.body is None:
        return [head.rstrip() + ";"]
    body = expr_doc(d.body)
    inner = trivia.inner if trivia is not None else None
    after = trivia.after_brace if trivia is not None else []
    opening = _trailing(trivia.open_trailing) if trivia is not None else ""
    closing = _trailing(trivia.close_trailing) if trivia is not None else ""
    if d.definitions is None or (not d.definitions and not (after or opening or closing)
                                 and (inner is None or not inner.end)):
        braces = "" if d.definitions is None else " { }"
        doc = cat(group(text(f"{head}{braces} connect"),
                        nest(len(pad) + 4, line(), body)), text(";"))
        return render(doc, WIDTH).split("\n")
    lines = [head.rstrip(), pad + "{" + opening]
    lines.extend(format_block(d.definitions, inner, depth + 1))
    lines.append(pad + "}" + closing)
    for c in after:
        lines.extend(reindent(c.text, pad, c.column))
    lines.extend(render(cat(text(f"{pad}connect "), nest(len(pad) + 4, body), text(";")), WIDTH).split("\n"))
    return lines


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


def _wrap(e, limit: int):
    """The document of `e` as an operand that must bind tighter than level `limit`."""
    doc = expr_doc(e)
    return cat(text("("), align(doc), text(")")) if _expr_level(e) >= limit else doc


def format_guarded(g: ast.Guarded) -> str:
    text = format_record_type(g.pattern)
    if g.guard is not None:
        text += f" if <{format_texpr(g.guard)}>"
    return text


def format_patterns(patterns) -> str:
    return ", ".join(format_guarded(g) for g in patterns)


def format_expr(e) -> str:
    """A connect expression, on one line."""
    return flat(expr_doc(e))


def _chain(parts, op: str):
    """``a OP b OP c`` that breaks before each operator."""
    docs = [parts[0]]
    for part in parts[1:]:
        docs.extend((line(), text(op + " "), part))
    return group(*docs)


def _postfix(operand, rest: str):
    return group(operand, line(), text(rest))


def expr_doc(e):
    """The layout document of a connect expression (:mod:`snet.syntax.layout`)."""
    if isinstance(e, ast.NameRef):
        return text(e.name)
    if isinstance(e, ast.Identity):
        return text("[]")
    if isinstance(e, ast.Filter):
        return filter_doc(e)
    if isinstance(e, ast.SyncCell):
        return text("[| " + format_patterns(e.patterns) + " |]")
    if isinstance(e, ast.Parallel):
        op, limit = ("||", 3) if e.deterministic else ("|", 4)
        return _chain([_wrap(b, limit) for b in e.branches], op)
    if isinstance(e, ast.Serial):
        return _chain([_wrap(s, 2) for s in e.stages], "..")
    if isinstance(e, ast.Star):
        return _postfix(_wrap(e.operand, 2), f"{'**' if e.deterministic else '*'} {format_patterns(e.patterns)}")
    if isinstance(e, ast.Split):
        op = ("!!" if e.deterministic else "!") + ("@" if e.placed else "")
        rest = f"{op} {e.tag.text}"
        if e.hi_tag is not None:
            rest += f" : {e.hi_tag.text}"
        return _postfix(_wrap(e.operand, 2), rest)
    if isinstance(e, ast.Feedback):
        return _postfix(_wrap(e.operand, 2), f"\\ {format_patterns(e.patterns)}")
    if isinstance(e, ast.Placement):
        return _postfix(_wrap(e.operand, 2), f"@ {e.machine}")
    raise TypeError(f"not a connect expression: {e!r}")


def format_out_item(item: ast.OutItem) -> str:
    if item.expr is not None:
        return f"{item.label[:-1]}={format_texpr(item.expr)}>"
    if item.label.startswith("<"):
        return item.label
    return item.label if item.source == item.label else f"{item.label}={item.source}"


def format_outputs(outputs) -> str:
    return "; ".join("{" + ", ".join(format_out_item(i) for i in r.items) + "}" for r in outputs)


def outputs_doc(outputs):
    """``{a}; {b}``, breaking after each ``;``, aligned on the first record."""
    records = ["{" + ", ".join(format_out_item(i) for i in r.items) + "}" for r in outputs]
    if len(records) < 2:
        return text("".join(records))
    docs = [text(records[0])]
    for record in records[1:]:
        docs.extend((text(";"), line(), text(record)))
    return align(group(*docs))


def format_filter(f: ast.Filter) -> str:
    return flat(filter_doc(f))


def filter_doc(f: ast.Filter):
    """``[p -> if <g> then A else B]``, breaking before each ``else``, aligned after ``->``."""
    clauses = []
    for i, clause in enumerate(f.clauses):
        outs = outputs_doc(clause.outputs)
        if clause.guard is None:
            clauses.append(outs)
            continue
        more = i + 2 < len(f.clauses) or f.clauses[-1].outputs
        clauses.append(text(f"if <{format_texpr(clause.guard)}> then"))
        if clause.outputs:
            clauses.extend((text(" "), outs))
        clauses.extend((line(), text("else " if more else "else")))
    return cat(text(f"[{format_record_type(f.pattern)} -> "), align(group(*clauses)), text("]"))


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
