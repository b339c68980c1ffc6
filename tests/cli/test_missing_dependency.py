"""A missing dependency (pydantic on a bare GPU image) is one message and exit 2, not an import
traceback; ``python -m parrotsim.calibrate.preflight`` still runs and names it."""

import subprocess
import sys

BLOCK = "import sys; sys.modules['pydantic'] = None; "  # import pydantic -> ModuleNotFoundError


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True,
                          timeout=120)


def test_the_console_script_names_the_missing_package():
    r = run("from parrotsim.entry import main; sys.exit(main(['--version']))")
    assert r.returncode == 2
    assert "'pydantic' is not installed" in r.stderr and "preflight" in r.stderr
    assert "Traceback" not in r.stderr


def test_with_every_dependency_the_command_line_runs():
    r = subprocess.run([sys.executable, "-m", "parrotsim", "--version"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("parrotsim ")
