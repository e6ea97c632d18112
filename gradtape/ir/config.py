"""Settings of the IR layer, read from the environment once at import.

GRADTAPE_CHECKS=1 runs the verifier after every pass (the test suite sets it).

GRADTAPE_MAX_ARRAY_BYTES (default: this machine's physical memory) is the
most bytes one value may hold: a type above it raises MemoryError when it is
made, at trace time, as NumPy raises when it cannot allocate (types.py).
Assign `max_array_bytes` to change it in a running program.
"""
import os


def _physical_memory() -> int:
    """Bytes of physical memory, or the largest array size when the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2**63 - 1


max_array_bytes = int(os.environ.get("GRADTAPE_MAX_ARRAY_BYTES") or _physical_memory())

checks = os.environ.get("GRADTAPE_CHECKS", "0") not in ("", "0", "false", "False")

# Python loops in a traced or recorded Function are written as scans (ir/reroll.py):
# GRADTAPE_REROLL=0 keeps them unrolled. A loop is rolled when it has at least
# reroll_min_trips iterations and its copies hold at least reroll_min_equations equations
# in all: below that, the unrolled program compiles about as fast and runs faster (a loop
# of 25 steps of 4 elementwise ops on 256 values: 1.4x the unrolled run time).
reroll = os.environ.get("GRADTAPE_REROLL", "1") not in ("", "0", "false", "False")
reroll_min_trips = int(os.environ.get("GRADTAPE_REROLL_MIN_TRIPS") or 4)
reroll_min_equations = int(os.environ.get("GRADTAPE_REROLL_MIN_EQUATIONS") or 128)
