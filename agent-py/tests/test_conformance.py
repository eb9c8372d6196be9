"""Each conformance program prints the same on LangGraph and on agentgraph."""

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = sorted((Path(__file__).parent / "conformance").glob("*.py"))
ON_AGENTGRAPH = (
    "import runpy, sys; import agentgraph.compat as c; c.install(); "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)


def run(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_same_output_as_langgraph(program: Path):
    pytest.importorskip("langgraph.graph")
    expected = run([sys.executable, str(program)])
    actual = run([sys.executable, "-c", ON_AGENTGRAPH, str(program)])
    assert actual == expected
