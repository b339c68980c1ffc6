"""Before measuring: is this environment able to calibrate? Every problem in one message.

``parrotsim calibrate`` (when it measures) calls :func:`problems` first and stops with exit
status 2 listing all of them: packages missing or outside the ranges the installed
``parrotsim`` declares (its dependencies and the ``gpu`` extra: torch, triton), no CUDA device,
or one without bf16 tensor cores (compute capability below 8.0). Only the standard library is
imported at module level, so ``python -m parrotsim.calibrate.preflight`` also runs where the
simulator's own dependencies are missing (a fresh GPU image) and lists them all.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import sys
from collections.abc import Callable

#: what the kernels need: bf16 tensor cores (Ampere and later)
MIN_COMPUTE_CAPABILITY = (8, 0)
OFFLINE_HELP = "see 'Offline install' in calibrate/profiles/README.md"

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)(?:;(.*))?$")
_OPS = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        "<": lambda a, b: a < b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version (``2.11.0+cu130`` -> (2, 11, 0); ``2.0rc1`` -> (2, 0))."""
    nums = []
    for part in version.split("+")[0].split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        nums.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(nums)


def satisfies(version: str, spec: str) -> bool:
    """Whether ``version`` meets a comma-separated ``spec`` such as ``>=1.26,<3`` (release
    numbers compared, padded with zeros; pre-release tags ignored)."""
    have = _release(version)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op = next(o for o in (">=", "<=", "==", "!=", ">", "<") if clause.startswith(o))
        want = _release(clause[len(op):].strip().rstrip(".*"))
        width = max(len(have), len(want))
        if not _OPS[op](have + (0,) * (width - len(have)), want + (0,) * (width - len(want))):
            return False
    return True


def requirements(extra: str = "gpu") -> list[tuple[str, str]]:
    """``(name, spec)`` of the installed parrotsim's dependencies and its ``extra``."""
    out = []
    for line in metadata.requires("parrotsim") or []:
        m = _REQ.match(line)
        if m is None:
            continue
        name, spec, marker = m.group(1), m.group(2).strip(), (m.group(3) or "")
        if "extra" in marker and f'"{extra}"' not in marker and f"'{extra}'" not in marker:
            continue
        out.append((name, spec))
    return out


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def cuda_device() -> tuple[str, tuple[int, int]] | None:
    """Name and compute capability of CUDA device 0 (None: torch sees no CUDA device)."""
    import torch

    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return None
    return torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0)


def problems(version_of: Callable[[str], str | None] = installed_version,
             device: Callable[[], tuple[str, tuple[int, int]] | None] = cuda_device,
             reqs: list[tuple[str, str]] | None = None) -> tuple[list[str], str]:
    """Every reason this environment cannot measure, and a one-line description of it."""
    if reqs is None:
        try:
            reqs = requirements()
        except metadata.PackageNotFoundError:
            return ["parrotsim is not installed (pip install --no-deps -e . in the checkout)"], ""
    found, bad = [], []
    for name, spec in reqs:
        have = version_of(name)
        if have is None:
            bad.append(f"{name}: not installed (needs {spec or 'any version'})")
        elif spec and not satisfies(have, spec):
            bad.append(f"{name} {have}: outside {spec}")
        elif name in ("torch", "triton", "numpy"):
            found.append(f"{name} {have}")
    if version_of("torch") is not None:
        try:
            dev = device()
        except Exception as exc:  # a broken CUDA set-up raises on the first query
            bad.append(f"CUDA: {exc.__class__.__name__}: {exc}")
        else:
            if dev is None:
                bad.append("no CUDA device visible to torch (torch.cuda.is_available() is False)")
            elif tuple(dev[1]) < MIN_COMPUTE_CAPABILITY:
                bad.append(f"{dev[0]}: compute capability {dev[1][0]}.{dev[1][1]}, the kernels "
                           f"need >= {MIN_COMPUTE_CAPABILITY[0]}.{MIN_COMPUTE_CAPABILITY[1]} "
                           "(bf16)")
            else:
                found.append(f"{dev[0]} (sm_{dev[1][0]}{dev[1][1]})")
    return bad, ", ".join(found)


def message(bad: list[str]) -> str:
    """The one message naming every problem."""
    return ("cannot measure here:\n" + "\n".join(f"  - {b}" for b in bad)
            + f"\n({OFFLINE_HELP})")


def main() -> int:
    bad, found = problems()
    if bad:
        print(f"parrotsim calibrate: {message(bad)}", file=sys.stderr)
        return 2
    print(f"ready to calibrate: {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
