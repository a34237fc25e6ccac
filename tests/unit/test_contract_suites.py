"""Issue 25: each contract suite calls every method of its interfaces, so a method added to store/base.py or
index/base.py without a contract test fails here, named."""

from __future__ import annotations

import inspect
import re
from abc import ABC
from pathlib import Path

import pytest

from delayq.index import base as index_base
from delayq.store import base as store_base

SUITES = Path(__file__).resolve().parents[1] / "integration"


def interface_methods(module) -> dict[str, str]:
    """Public method name -> the interface (an ABC the module declares) that declares it."""
    found: dict[str, str] = {}
    for name, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ == module.__name__ and issubclass(cls, ABC):
            for method, member in vars(cls).items():
                if not method.startswith("_") and inspect.isfunction(member):
                    found.setdefault(method, name)
    return found


@pytest.mark.parametrize("module, suite", [(store_base, "test_store_contract.py"),
                                           (index_base, "test_index_contract.py")])
def test_every_interface_method_is_called_by_its_contract_suite(module, suite):
    methods = interface_methods(module)
    source = (SUITES / suite).read_text()
    uncalled = sorted(f"{owner}.{method}" for method, owner in methods.items()
                      if not re.search(rf"\.{method}\(", source))
    assert len(methods) > 10, f"found only {sorted(methods)} in {module.__name__}"
    assert uncalled == [], f"{suite} calls none of: {', '.join(uncalled)}"
