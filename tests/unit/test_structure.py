"""The package's structure, drawn from its imports: no circle, and no arrow back up the layers of
docs/ARCHITECTURE.md. Every import counts: at module level, under TYPE_CHECKING, or inside a function."""

import ast
import pathlib

import delayq

ROOT = pathlib.Path(delayq.__file__).parent

# Top first. A module may import from its own layer or any below it, never from one above.
LAYERS = [
    ("entry points", ["delayq", "delayq.__main__", "delayq.cli", "delayq.commands", "delayq.integrations",
                      "delayq.web"]),
    ("the application's side", ["delayq.app", "delayq.default", "delayq.methods", "delayq.client", "delayq.pull",
                                "delayq.testing"]),
    ("the runner", ["delayq.runner"]),
    ("over the manager", ["delayq.recovery", "delayq.bulk", "delayq.metrics", "delayq.alerts", "delayq.scheduler"]),
    ("the manager", ["delayq.manager", "delayq.reports", "delayq.control"]),
    ("the store and the due index", ["delayq.store", "delayq.index", "delayq.steps"]),
    ("settings", ["delayq.config"]),
    ("rules and values", ["delayq.validate", "delayq.search", "delayq.registry", "delayq.events", "delayq.retries",
                          "delayq.jobs", "delayq.ladders", "delayq.words", "delayq.fairness", "delayq.workers",
                          "delayq.grouping", "delayq.webhook", "delayq.clock", "delayq.context", "delayq.logs",
                          "delayq.errors", "delayq.version", "delayq.redis_urls", "delayq.mysql_urls", "delayq.schedules",
                          "delayq.cron", "delayq.limits"]),
]


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """module -> the delayq modules it imports (a name imported from a package that is a module of its own
    counts as that module)."""
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    arrows: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = (".".join(package.split(".")[:len(package.split(".")) - node.level + 1] +
                                 ([node.module] if node.module else [])) if node.level else node.module or "")
                if base.split(".")[0] == "delayq":
                    found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "delayq"}
        arrows[name] = found - {name}
    return arrows


def layer_of(module: str) -> int:
    best = None
    for depth, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + ".") and prefix != "delayq":
                if best is None or len(prefix) > best[1]:
                    best = (depth, len(prefix))
    assert best is not None, f"{module} is in no layer of LAYERS (tests/unit/test_structure.py): place it"
    return best[0]


def cycles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in arrows.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in arrows:
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer_and_the_graph_is_read():
    arrows = imports()
    assert len(arrows) > 80 and sum(map(len, arrows.values())) > 250
    assert "delayq.manager" in arrows["delayq.bulk"] and "delayq.reports" in arrows["delayq.manager"]
    for module in arrows:
        layer_of(module)


def test_no_import_runs_back_up_the_layers():
    up = [f"{source} ({LAYERS[layer_of(source)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
          for source, targets in imports().items() for target in targets if layer_of(target) < layer_of(source)]
    assert up == []


def test_the_url_readers_are_leaves():
    """The settings check URLs with them and the store and the index connect to what they read: they import no
    other delayq module (the standard library only)."""
    arrows = imports()
    assert {module: arrows[module] for module in ("delayq.redis_urls", "delayq.mysql_urls", "delayq.version")} == \
        {"delayq.redis_urls": set(), "delayq.mysql_urls": set(), "delayq.version": set()}


def test_no_circle():
    assert cycles(imports()) == []


def test_the_checker_sees_a_circle_and_an_arrow_up():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("delayq.manager") > layer_of("delayq.runner.worker") > layer_of("delayq.web.forms")


def test_the_manager_keeps_the_writes_and_stays_small():
    """Issue 25: reads are Reports, pausing, heartbeats and the audit trail Control; bulk actions bulk.py."""
    from delayq.manager import Manager

    methods = [name for cls in Manager.__mro__ if cls.__module__ == "delayq.manager"
               for name, value in vars(cls).items() if callable(value) or isinstance(value, property)]
    assert len(methods) < 25, methods
    assert {"enqueue", "claim", "finish", "retry", "cancel", "extend"} <= set(methods)
    assert not {"search", "stats", "pause", "heartbeat", "record_action", "bulk_cancel"} & set(methods)


def test_no_class_is_over_about_150_lines():
    """Issue 25: a class a newcomer reads whole (a bigger one is split by concern: the runner's Supervisor and Worker
    into parts a module each, the store into one module per interface)."""
    sizes = {}
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                sizes[f"{module_name(path)}.{node.name}"] = node.end_lineno - node.lineno + 1
    assert "delayq.runner.supervisor.Supervisor" in sizes
    assert {name: n for name, n in sizes.items() if n > 165} == {}
