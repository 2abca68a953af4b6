"""The engine checks its own state with real exceptions: `assert` vanishes under `python -O`."""

import ast
from pathlib import Path

import pytest

from reasoning.types import EngineStateError, require

ENGINE = Path(__file__).resolve().parents[2] / "reasoning"


def test_the_engine_uses_no_assert_statements():
    found = [
        f"{path.relative_to(ENGINE.parent)}:{node.lineno}"
        for path in ENGINE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Assert)
    ]
    assert found == []


def test_a_missing_piece_of_state_is_a_named_error():
    assert require(0, "zero") == 0
    with pytest.raises(EngineStateError, match="the plan is missing"):
        require(None, "the plan")
