"""Writing a Function again with each Run (reroll_check.py) as one scan equation.

For a Run of k iterations, the equations written in its place are: its scanned inputs
stacked (slices of every iteration at once, or one row per iteration joined), the
scan, and, for each value of an iteration read after the loop, that row of the
stacked output the body returns for it. The final value of each carry keeps the Var
the last iteration gave it.

    a0 = slice[i=0] x ; h1 = f h0 a0 ; a1 = slice[i=1] x ; h2 = f h1 a1 ; ...   -> hk
 -> xs = reshape (slice[i=0..k-1] x) ; hk = scan[body={ h a . h' = f h a -> h' }, length=k] h0 xs

A join of rows (`gt.stack` of the values a loop appended to a list: `concatenate`
of one-row reshapes) is read back as the stacked value itself, or a slice of it,
so a stacked output costs no copy per iteration; the same rule turns the rows of x
that a loop of the Function's reads (`x[i]` taken before the loop) back into x.
"""
from __future__ import annotations

import numpy as np

from .builder import Builder, Sym
from .core import Eqn, Function, Literal, Var
from .ops.indexing import concatenate_p, gather, gather_p, normalize_slice_params, slice, slice_p
from .ops.layout import reshape, reshape_p, transpose
from .ops.loops import scan_p
from .types import TensorType


class Writer:
    """The equations of the rewritten Function, with the Vars they replace (`subst`)."""

    def __init__(self):
        self.out = []
        self.builder = Builder()
        self.builder.eqns = self.out
        self.subst = {}
        self.rows = {}  # Var -> (base, i, one): row i of base, of shape (1,) + row when `one`

    def atom(self, a):
        return a if type(a) is Literal else self.subst.get(a, a)

    def bind(self, op, atoms, **params) -> Var:
        v = self.builder.bind(op, atoms, params)
        self.note(self.out[-1])
        return v

    def emit(self, op, atom, params: dict, type) -> Var:
        """`op[params] atom` of a type known already: one equation per iteration (rows to
        stack, rows to read back) costs no shape rule."""
        v = Var(type)
        eqn = Eqn(op, (atom,), params, (v,))
        self.out.append(eqn)
        self.note(eqn)
        return v

    def keep(self, eqn):
        """An equation of the input, its operands replaced; joins of rows read back."""
        if self.subst:
            inputs = tuple(self.atom(a) for a in eqn.inputs)
            if inputs != eqn.inputs:
                eqn = Eqn(eqn.op, inputs, eqn.params, eqn.outvars)
        if eqn.op is concatenate_p and self.join(eqn):
            return
        self.out.append(eqn)
        self.note(eqn)

    def note(self, eqn):
        """Remember rows: a one-row slice along axis 0, and reshapes adding or dropping that axis."""
        op = eqn.op
        if op is slice_p:
            x, p = eqn.inputs[0], eqn.params
            shape = x.type.shape
            if shape and p["stops"][0] == p["starts"][0] + 1 and all(
                    p["starts"][a] == 0 and p["stops"][a] == shape[a] and p["steps"][a] == 1
                    for a in range(1, len(shape))):
                self.rows[eqn.outvars[0]] = (x, p["starts"][0], True)
        elif op is reshape_p:
            src = self.rows.get(eqn.inputs[0])
            if src is not None:
                base = src[0]
                row, shape = base.type.shape[1:], eqn.outvars[0].type.shape
                if shape == row:
                    self.rows[eqn.outvars[0]] = (base, src[1], False)
                elif shape == (1,) + row:
                    self.rows[eqn.outvars[0]] = (base, src[1], True)

    def join(self, eqn) -> bool:
        """Read a concatenate along axis 0 of consecutive rows of one array as a slice of it;
        False when it joins no two such rows."""
        if eqn.params["axis"] != 0:
            return False
        groups = []  # [operand] alone, or [base, first, step, count, operand] rows of base
        for a in eqn.inputs:
            row = self.rows.get(a) if type(a) is not Literal else None
            g = groups[-1] if groups else None
            if row is None or not row[2]:
                groups.append([a])
            elif g is not None and len(g) == 5 and g[0] is row[0] and (
                    (g[3] == 1 and abs(row[1] - g[1]) == 1) or (g[3] > 1 and row[1] == g[1] + g[3] * g[2])):
                g[2] = row[1] - g[1] if g[3] == 1 else g[2]
                g[3] += 1
            else:
                groups.append([row[0], row[1], 1, 1, a])
        if all(len(g) == 1 or g[3] == 1 for g in groups):
            return False
        ins = []
        for g in groups:
            if len(g) == 1 or g[3] == 1:
                ins.append(g[-1])
                continue
            base, first, step, count, _ = g
            if first == 0 and step == 1 and count == base.type.shape[0]:
                ins.append(base)
            else:
                ins.append(self.bind(slice_p, [base], **_row_params(base.type.shape, first, first + step * count, step)))
        if len(ins) == 1:
            self.subst[eqn.outvars[0]] = ins[0]
        else:
            self.out.append(Eqn(concatenate_p, ins, eqn.params, eqn.outvars))
        return True

    # --- a Run as a scan ---------------------------------------------------------------

    def scan(self, run, eqns, last_use, finish_body, memo) -> Function:
        """Write `run` as one scan (see the module docstring); returns its body.
        `finish_body(fn, trips)` rewrites a new body (its own loops); `memo` keeps bodies by
        structure, so that equal loops (an inner loop at each outer iteration) share one."""
        s, p, k, end = run.start, run.period, run.trips, run.end
        final = set(run.carries)
        late = []  # (iteration, r, o, Var) of each value read after the loop
        read_at = last_use.get
        for j in range(s, end):
            for o, v in enumerate(eqns[j].outvars):
                if read_at(v, -1) >= end:
                    b, r = divmod(j - s, p)
                    if not (b == k - 1 and (r, o) in final):
                        late.append((b, r, o, v))
        y_index = {}
        for _, r, o, _ in late:
            y_index.setdefault((r, o), None)
        ys = sorted(y_index)
        y_index = {y: i for i, y in enumerate(ys)}
        reads = [(b, y_index[(r, o)], v) for b, r, o, v in late]
        xs = [self._stacked(run, eqns, x) for x in run.xs]
        body = _body(run, eqns, ys, [a.type for a in xs], finish_body, memo)
        operands = [self.atom(a) for a in run.inits] + xs + [self.atom(a) for a in run.consts]
        last = s + (k - 1) * p
        n_carry = len(run.carries)
        outs = [eqns[last + r].outvars[o] for r, o in run.carries]
        outs += [Var(TensorType((k,) + t.shape, t.dtype)) for t in body.out_types[n_carry:]]
        self.out.append(Eqn(scan_p, operands, {"body": body, "length": k, "reverse": False,
                                               "n_carry": n_carry, "n_xs": len(xs)}, outs))
        stacked = outs[n_carry:]
        for c, (r, o) in enumerate(run.carries):
            if (r, o) in y_index:  # the final carry is also the stacked output's last row
                self.rows[outs[c]] = (stacked[y_index[(r, o)]], k - 1, False)
        row_types = [TensorType((1,) + y.type.shape[1:], y.type.dtype) for y in stacked]
        squeezed = [{"shape": y.type.shape[1:]} for y in stacked]
        for b, y, v in reads:
            row = self.emit(slice_p, stacked[y], _row_params(stacked[y].type.shape, b, b + 1, 1), row_types[y])
            self.subst[v] = self.emit(reshape_p, row, squeezed[y], v.type)
        return body

    def _stacked(self, run, eqns, x):
        """The operand of scanned input `x`: every iteration's value, stacked along a new axis 0."""
        s, p, k = run.start, run.period, run.trips
        kind = x[0]
        if kind == "literals":
            return Literal(np.stack([lit.value for lit in x[1]]))
        if kind == "stack":
            atoms = [self.atom(a) for a in x[1]]
            shape = (1,) + atoms[0].type.shape
            params, row = {"shape": shape}, TensorType(shape, atoms[0].type.dtype)
            rows = [self.emit(reshape_p, a, params, row) for a in atoms]
            joined = Eqn(concatenate_p, rows, {"axis": 0}, [Var(TensorType((k,) + shape[1:], atoms[0].type.dtype))])
            if not self.join(joined):
                self.out.append(joined)
            return self.atom(joined.outvars[0])
        _, r, axis, indices = x
        first = eqns[s + r]
        base = Sym(self.atom(first.inputs[0]), self.builder)
        starts, stops, steps = (list(first.params[n]) for n in ("starts", "stops", "steps"))
        step = indices[1][0] - indices[0][0]
        if len(indices[0]) == 1 and step and all(i[0] == indices[0][0] + b * step for b, i in enumerate(indices)):
            # x[i] with i moving by a constant step: one slice of every iteration's rows
            stops[axis], steps[axis] = starts[axis] + k * step, step
            every = slice(base, starts, stops, steps)
        else:  # windows, or starts that do not move linearly: the other axes' slice, then a gather
            starts[axis], stops[axis], steps[axis] = 0, base.shape[axis], 1
            every = gather(slice(base, starts, stops, steps), Sym(Literal(np.array(indices, np.int64)), self.builder), axis)
        if axis:
            every = transpose(every, (axis,) + tuple(a for a in range(every.ndim) if a != axis))
        return reshape(every, (k,) + first.outvars[0].type.shape).atom


def _row_params(shape, first, stop, step) -> dict:
    starts, stops, steps = normalize_slice_params((first,) + (0,) * (len(shape) - 1),
                                                  (stop,) + tuple(shape[1:]), (step,) + (1,) * (len(shape) - 1))
    return {"starts": starts, "stops": stops, "steps": steps}


def _body(run, eqns, ys, xs_types, finish_body, memo) -> Function:
    """The loop body: carries, scanned inputs and constants in; new carries and ys out."""
    s, p = run.start, run.period
    carry_in = [Var(eqns[s + r].outvars[o].type) for r, o in run.carries]
    xs_in = [Var(TensorType(t.shape[1:], t.dtype)) for t in xs_types]
    const_in = [Var(a.type) for a in run.consts]
    key = [tuple(v.type for v in carry_in), tuple(v.type for v in xs_in), tuple(v.type for v in const_in),
           tuple(run.carries), tuple(ys)]
    env, body_eqns = {}, []
    for r in range(p):
        e = eqns[s + r]
        if r in run.hoisted:
            env[(r, 0)] = xs_in[run.hoisted[r]]
            key.append(("hoisted", run.hoisted[r]))
            continue
        op, params = e.op, e.params
        if r in run.gathered:  # a slice whose start moves: a gather of the iteration's indices
            axis, x = run.gathered[r]
            op, params = gather_p, {"axis": axis}
        ins = []
        for slot in run.slots[r]:
            tag = slot[0]
            if tag == "in":
                ins.append(env[slot[1:]])
            elif tag == "carry":
                ins.append(carry_in[slot[1]])
            elif tag == "const":
                ins.append(const_in[slot[1]])
            elif tag == "xs":
                ins.append(xs_in[slot[1]])
            else:
                ins.append(slot[1])
        if op is gather_p:
            ins.append(xs_in[x])
        outs = [Var(v.type) for v in e.outvars]
        for o, v in enumerate(outs):
            env[(r, o)] = v
        body_eqns.append(Eqn(op, ins, params, outs))
        key.append((op, tuple(sorted(params.items())), tuple(_slot_key(slot) for slot in run.slots[r])))
    fn = Function(carry_in + xs_in + const_in, body_eqns, [env[c] for c in run.carries] + [env[y] for y in ys])
    try:
        key = tuple(key)
        hit = memo.get(key)
    except TypeError:  # an unhashable param: no sharing
        return finish_body(fn, run.trips)
    if hit is None:
        hit = memo[key] = finish_body(fn, run.trips)
    return hit


def _slot_key(slot):
    if slot[0] == "lit":
        lit = slot[1]
        return ("lit", lit.type, lit.value.tobytes())
    return slot
