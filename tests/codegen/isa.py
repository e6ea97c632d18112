"""What packed (SIMD) code looks like on the target CPU, for assembly checks.

The tests ask the target (gradtape.codegen.cpu: GRADTAPE_CPU, the host by
default) what it has, never assume this machine's vector width:

- an SSE-only target (x86-64, x86-64-v2) has 16-byte xmm registers and
  legacy-encoded instructions (`addpd`);
- an AVX2 target uses VEX-encoded instructions (`vaddpd`) on ymm;
- an AVX-512 target may use ymm or zmm: LLVM prefers 256-bit vectors on
  some AVX-512 CPUs (most Intel cores) and 512-bit on others (AMD Zen 4/5),
  so both count as wide;
- a target named by an LLVM CPU name (GRADTAPE_CPU=haswell, skylake-avx512)
  is compiled by LLVM with all of that CPU's features, but gradtape cannot
  list them and assumes only SSE2 (codegen.cpu): its registers may be of
  any width and its instructions of either encoding.
"""
from __future__ import annotations

import re

from gradtape.codegen import cpu


def _features_listed() -> bool:
    """False for a target given by an LLVM CPU name: `known` is then a floor, not its features."""
    target = cpu.current()
    return bool(target.features) or target.name in cpu.LEVELS


def wide_registers() -> str:
    """A regex alternative of the widest vector registers the target's loops may use."""
    target = cpu.current()
    if not _features_listed():
        return "[xyz]mm"
    if target.has("avx512f"):
        return "[yz]mm"
    if target.has("avx2"):
        return "ymm"
    return "xmm"


def vex_prefix() -> str:
    """'v' when the target encodes SIMD instructions with VEX/EVEX (AVX and later), else ''
    ('v?', either, for a target given by an LLVM CPU name)."""
    if not _features_listed():
        return "v?"
    return "v" if cpu.current().has("avx") else ""


def packed(mnemonic: str) -> re.Pattern:
    """Matches packed instruction `mnemonic` (a regex without the v prefix, e.g. 'add', 'max', 'fmadd\\w*'
    followed by its pd/ps suffix) on the target's wide registers."""
    return re.compile(rf"\b{vex_prefix()}{mnemonic}\s+[^\n]*%{wide_registers()}")


def libmvec_variant_prefix(dtype: str) -> str:
    """The x86-64 vector-ABI name prefix of the one libmvec variant the target's code calls
    (gradtape.codegen.math_libmvec): the widest it has, AVX-512's (zmm) on an AVX-512 target,
    AVX2's (ymm) when it has AVX2 and FMA, else SSE's (xmm)."""
    target = cpu.current()
    isa, lanes64 = ("e", 8) if target.has("avx512f") else ("d", 4) if target.has("avx2", "fma") else ("b", 2)
    return f"_ZGV{isa}N{lanes64 if dtype == 'f64' else 2 * lanes64}"
