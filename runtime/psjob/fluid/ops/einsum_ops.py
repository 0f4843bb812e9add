"""`einsum` (paddle.einsum): Out = the Einstein summation of Operands by `equation`.

The equation is Paddle's: one term of letters per operand, comma-separated, then
optionally `->` and the output's letters; without `->` the output holds the letters
that occur once, in alphabetical order (Paddle's API docs: paddle.einsum). A letter shared by terms must have the same size
in each. Ellipsis ("...") and a letter repeated within one term (a diagonal) are
refused. The gradient of an operand is the einsum of Out@GRAD with the other
operands into that operand's term, broadcast along letters found nowhere else
(letters summed away by the forward).
"""
from __future__ import annotations

from psjob.fluid.framework import GraphError
from psjob.fluid.ops.registry import GradOpSpec, grad_name, in_var, register_op, set_out


def parse_equation(equation, ranks):
    """(input terms, output term) of `equation` for operands of the given ranks."""
    if not isinstance(equation, str):
        raise GraphError(f"einsum: equation must be a string, got {equation!r}")
    eq = equation.replace(" ", "")
    if "." in eq:
        raise GraphError(f"einsum: ellipsis ('...') in {equation!r} is not supported by psjob; "
                         "name every dimension with a letter")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise GraphError(f"einsum: {equation!r} has {len(terms)} operand terms but {len(ranks)} operands "
                         "were given")
    for term, rank in zip(terms, ranks):
        if not term.isalpha() or len(term) != rank:
            raise GraphError(f"einsum: term {term!r} of {equation!r} must be {rank} letters, one per "
                             "dimension of its operand")
        if len(set(term)) != len(term):
            raise GraphError(f"einsum: term {term!r} of {equation!r} repeats a letter (a diagonal), "
                             "which psjob does not support")
    letters = "".join(terms)
    if not arrow:
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if (rhs and not rhs.isalpha()) or len(set(rhs)) != len(rhs) or any(c not in letters for c in rhs):
        raise GraphError(f"einsum: output {rhs!r} of {equation!r} must be distinct letters that the "
                         "operand terms use")
    return terms, rhs


def _einsum_shape(op):
    xs = [in_var(op, "Operands", i) for i in range(len(op.input("Operands")))]
    terms, rhs = parse_equation(op.attr("equation"), [len(x.shape) for x in xs])
    sizes = {}
    for term, x in zip(terms, xs):
        for c, d in zip(term, x.shape):
            known = sizes.get(c, -1)
            if d >= 0 and known >= 0 and d != known:
                raise GraphError(f"einsum {op.attr('equation')!r}: letter {c!r} is {known} in one operand "
                                 f"and {d} in {x.name}{list(x.shape)}")
            if known < 0:
                sizes[c] = d
    set_out(op, "Out", [sizes[c] for c in rhs], xs[0].dtype)


def _einsum_grad(op):
    names = op.input("Operands")
    return [GradOpSpec("einsum_grad", {"Operands": names, "Out@GRAD": [grad_name(op.output("Out")[0])]},
                       {"Operands@GRAD": [grad_name(n) for n in names]}, dict(op.attrs))]


@register_op("einsum", infer_shape=_einsum_shape, grad=_einsum_grad)
def einsum(ctx):
    xs = ctx.input_list("Operands")
    terms, rhs = parse_equation(ctx.attr("equation"), [x.ndim for x in xs])
    out = ctx.xp.einsum(",".join(terms) + "->" + rhs, *xs, optimize=len(xs) > 1)
    ctx.set_output("Out", ctx.xp.ascontiguousarray(out, dtype=xs[0].dtype))


@register_op("einsum_grad")
def einsum_grad(ctx):
    xp = ctx.xp
    xs, dout = ctx.input_list("Operands"), ctx.input("Out@GRAD")
    terms, rhs = parse_equation(ctx.attr("equation"), [x.ndim for x in xs])
    for i, (term, x) in enumerate(zip(terms, xs)):
        others = [t for j, t in enumerate(terms) if j != i]
        seen = rhs + "".join(others)
        kept = "".join(c for c in term if c in seen)
        eq = ",".join([rhs] + others) + "->" + kept
        g = xp.einsum(eq, dout, *(x for j, x in enumerate(xs) if j != i), optimize=True)
        # letters only this operand has were summed away: each element got the same gradient
        g = g.reshape([d if c in kept else 1 for c, d in zip(term, x.shape)])
        ctx.set_output("Operands@GRAD", xp.ascontiguousarray(xp.broadcast_to(g, x.shape), dtype=x.dtype), i=i)
