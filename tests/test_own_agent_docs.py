"""The three agents of docs/own-agent.md run as written and pass the contract checks (and the
local-DP one its privacy audit, false alarm rate 1e-6); each class stays under 30 lines."""

import re
import sys
import types
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "own-agent.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_three_examples():
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("code", BLOCKS, ids=["plain", "local", "global"])
def test_example_runs_and_passes_the_checks(code, monkeypatch):
    module = types.ModuleType("own_agent_example")  # a module, as a user's file is: picklable
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, str(DOC), "exec"), module.__dict__)
    classes = re.findall(r"^class \w+\(.*?(?=^\S|\Z)", code, re.S | re.M)
    assert len(classes) == 1 and len(classes[0].strip().splitlines()) < 30
