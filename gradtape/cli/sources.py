"""Where each equation came from: the user's source line that traced it, for `inspect --graph`.

    with recording_sites() as sites:
        traced = trace_call(f, args, sig, name)
    sites[traced.fn.eqns[0].out]      # Site("losses.py", 12, "/abs/losses.py", "return gt.sum(w * x)")

The IR keeps no source locations (an Eqn is op, inputs, params, outvars:
what every pass copies), so the command line records them itself, while it
traces: for the duration of the `with`, FunctionTrace.bind (the one place
a traced equation is appended) is wrapped to note the first frame outside
gradtape and NumPy. Only `inspect` pays for the frame walk; tracing for
compilation never does. Equations the adjoint adds are attributed to the
primal equation whose derivative rule wrote them (`derivative_sites`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import linecache
import os
import sys

from ..tracer.numpy_names import _GRADTAPE_DIR, _NUMPY_DIR
from ..tracer.trace_context import FunctionTrace


@dataclasses.dataclass(frozen=True)
class Site:
    file: str  # base name, as error messages print it
    line: int
    path: str  # absolute, for a link
    code: str  # the line's text, stripped
    derivative: bool = False  # written by the derivative rule of the equation at this line

    def __str__(self):
        return f"{self.file}:{self.line}{' (derivative)' if self.derivative else ''}"


@contextlib.contextmanager
def recording_sites(user_files=()):
    """Yields {Var: Site}, filled with the output Vars of every equation traced inside the block.

    `user_files`: files that are the user's even inside the package (the traced function's own file,
    for gradtape.demo:rosenbrock), where the walk outwards stops too."""
    sites: dict = {}
    user_files = {os.path.abspath(f) for f in user_files}
    own = FunctionTrace.__dict__.get("bind")  # None: FunctionTrace inherits ir.Builder's
    bind = FunctionTrace.bind

    def recording_bind(self, op, atoms, params):
        out = bind(self, op, atoms, params)
        site = _user_site(sys._getframe(1), user_files)
        if site is not None:
            for v in out if isinstance(out, tuple) else (out,):
                sites[v] = site
        return out

    FunctionTrace.bind = recording_bind
    try:
        yield sites
    finally:
        if own is None:
            del FunctionTrace.bind
        else:
            FunctionTrace.bind = own


def _user_site(frame, user_files) -> Site | None:
    """The innermost frame outside gradtape and NumPy (or in `user_files`), as error messages name it."""
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path in user_files or not path.startswith((_GRADTAPE_DIR, _NUMPY_DIR)):
            break
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    return Site(os.path.basename(path), line, path, linecache.getline(path, line).strip())


def derivative_sites(sites: dict, origins: dict) -> dict:
    """{Var: Site} of the adjoint's equations: `origins` maps each Var the adjoint added to the
    primal Eqn whose derivative rule wrote it (ir.vjp's `origins`)."""
    out = {}
    for v, eqn in origins.items():
        site = sites.get(eqn.outvars[0])
        if site is not None:
            out[v] = dataclasses.replace(site, derivative=True)
    return out
