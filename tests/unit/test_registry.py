import pytest

from delayq.errors import CallableRefused, InvalidInput
from delayq.registry import Registry

ALLOWED = ("examples",)


@pytest.mark.parametrize("name", ["os:system", "builtins:eval", "subprocess:run", "examples2.x:y"])
def test_modules_outside_the_allow_list_are_refused_before_import(name):
    with pytest.raises(CallableRefused, match="not under DELAYQ_ALLOWED_MODULES"):
        Registry(ALLOWED).resolve(name)


def test_empty_allow_list_refuses_everything_and_says_how_to_fix():
    with pytest.raises(CallableRefused, match="DELAYQ_ALLOWED_MODULES is empty"):
        Registry(()).resolve("examples.shop:noop")


def test_unmarked_function_and_imported_names_are_refused():
    with pytest.raises(CallableRefused, match="not marked"):
        Registry(ALLOWED).resolve("examples.shop:not_a_job")
    with pytest.raises(CallableRefused, match="not marked"):
        Registry(ALLOWED).resolve("examples.shop:os")   # a module the job file imported


def test_marked_function_and_class_methods_resolve():
    registry = Registry(ALLOWED)
    assert registry.resolve("examples.shop:noop")() is None
    assert registry.resolve("examples.shop:Orders.ping")() == "pong"
    with pytest.raises(CallableRefused, match="not a public method"):
        registry.resolve("examples.shop:Orders._secret")
    with pytest.raises(InvalidInput, match="names a class"):
        registry.resolve("examples.shop:Orders")
