"""Which recording of a golden file this machine compares against.

The recorded outputs are bit-for-bit, and some of their last bits depend on the CPU, not on our
code: numpy computes float64 transcendental functions (``power``, ``exp``, ``log``, ...) with
SIMD code chosen by CPU (Intel's SVML on AVX-512 machines), and OpenBLAS picks its kernels (and
so its summation order) by CPU. On an AVX2 machine the code of 62fc0a5 gave other last bits than
the untagged recordings for the generated traces' exact-mechanics runs, the seeded throughput
noise, the LPs of ``H3`` and the water-filling MILPs (``docs/simulator.md``). So a golden file
is kept per CPU class: the files without a tag were recorded on an AVX-512 machine; a file
``NAME.avx2.json.gz`` holds the same cases recorded, from the same code, on a machine with AVX2
and no AVX-512 (2026-12-02: 62fc0a5, the code the untagged files guarded). A machine compares
against the file of its class, or against the untagged one when its class has none.
"""

from __future__ import annotations

from pathlib import Path

#: The class the untagged files were recorded on.
UNTAGGED = "avx512"


def platform_tag() -> str:
    """This machine's class: ``avx512``, ``avx2`` or ``baseline`` (numpy's CPU dispatch)."""
    from numpy._core._multiarray_umath import __cpu_features__ as features

    if features.get("AVX512_SKX") or features.get("AVX512F"):
        return "avx512"
    return "avx2" if features.get("AVX2") else "baseline"


def golden_path(directory: Path, stem: str, suffix: str = ".json.gz") -> Path:
    """The golden file ``stem`` to compare against on this machine (see the module notes)."""
    tag = platform_tag()
    tagged = directory / f"{stem}.{tag}{suffix}"
    if tag == UNTAGGED or not tagged.exists():
        return directory / f"{stem}{suffix}"
    return tagged


def record_path(directory: Path, stem: str, suffix: str = ".json.gz") -> Path:
    """Where this machine records the golden file ``stem``."""
    tag = platform_tag()
    return directory / (f"{stem}{suffix}" if tag == UNTAGGED else f"{stem}.{tag}{suffix}")
