"""What packed (SIMD) code looks like on the target CPU, for assembly checks.

The tests ask the target (gradtape.codegen.cpu: GRADTAPE_CPU, the host by
default) what it has, never assume this machine's vector width:

- an SSE-only target (x86-64, x86-64-v2) has 16-byte xmm registers and
  legacy-encoded instructions (`addpd`);
- an AVX2 target uses VEX-encoded instructions (`vaddpd`) on ymm;
- an AVX-512 target may use ymm or zmm: LLVM prefers 256-bit vectors on
  some AVX-512 CPUs (most Intel cores) and 512-bit on others (AMD Zen 4/5),
  so both count as wide.
"""
from __future__ import annotations

import re

from gradtape.codegen import cpu


def wide_registers() -> str:
    """A regex alternative of the widest vector registers the target's loops may use."""
    target = cpu.current()
    if target.has("avx512f"):
        return "[yz]mm"
    if target.has("avx2"):
        return "ymm"
    return "xmm"


def vex_prefix() -> str:
    """'v' when the target encodes SIMD instructions with VEX/EVEX (AVX and later), else ''."""
    return "v" if cpu.current().has("avx") else ""


def packed(mnemonic: str) -> re.Pattern:
    """Matches packed instruction `mnemonic` (a regex without the v prefix, e.g. 'add', 'max', 'fmadd\\w*'
    followed by its pd/ps suffix) on the target's wide registers."""
    return re.compile(rf"\b{vex_prefix()}{mnemonic}\s+[^\n]*%{wide_registers()}")


def libmvec_variant_prefix(dtype: str) -> str:
    """The x86-64 vector-ABI name prefix of the libmvec variant the loop vectorizer calls at 256
    bits or less: the AVX2 ones (ymm) when the target has AVX2 and FMA, else the SSE ones (xmm)."""
    lanes64 = 4 if cpu.current().has("avx2", "fma") else 2
    isa = "d" if lanes64 == 4 else "b"
    return f"_ZGV{isa}N{lanes64 if dtype == 'f64' else 2 * lanes64}"


def libmvec_widest_prefix(dtype: str) -> str:
    """The prefix of the target's widest libmvec variant: the AVX-512 ones (zmm) on an
    AVX-512 target, else libmvec_variant_prefix."""
    if cpu.current().has("avx512f"):
        return f"_ZGVeN{8 if dtype == 'f64' else 16}"
    return libmvec_variant_prefix(dtype)


def libmvec_variant_pattern(dtype: str) -> str:
    """A regex of the libmvec variants a loop may call on the target: on AVX-512, LLVM keeps
    to 256 bits on some CPUs (most Intel cores) and uses 512 on others (AMD Zen 4/5)."""
    return "|".join(sorted({libmvec_variant_prefix(dtype), libmvec_widest_prefix(dtype)}))
