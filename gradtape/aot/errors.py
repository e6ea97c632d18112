"""Exceptions of gradtape.aot."""


class AotError(RuntimeError):
    """Ahead-of-time compilation, saving, loading or export failed; the message says why and what to do."""
