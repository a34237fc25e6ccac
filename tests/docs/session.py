"""Runs one doc's examples in order, as a reader would, in one process: `python session.py PLAN RESULT`.

tests/docs/test_examples.py writes the plan (the doc's blocks, placeholders already replaced) and starts this
script with the application's directory as its working directory and a clean environment. Python blocks are
executed here, one after the other in one namespace (a later block sees what an earlier one defined, as in one
interpreter session); each shell or cron block is one bash script, every command checked for its exit status
(and, in a console block, for the output shown under it) before the next runs. The first failure ends the
session: later blocks build on earlier ones. The result is JSON: {"ran": N, "failure": null or {...}}.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback

SHELL_TIMEOUT = 90          # seconds one shell block may take: the slowest runs loop.sh's (shortened) minute
LINGER = 30                 # seconds what a block started keeps running after it (loop.sh's runs outlive their loop)
PR_SET_CHILD_SUBREAPER = 36


def main(plan_path: str, result_path: str) -> int:
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    sys.path.insert(0, os.getcwd())            # the application's modules, as `python` in its directory finds them
    # a block's orphans (a loop.sh run outlives its loop, as under cron) become this process's children, to be waited for
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    namespace: dict = {"__name__": "__main__"}
    ran = 0
    failure = None
    for step in plan["steps"]:
        start = time.monotonic()
        failure = run_python(step, namespace) if step["kind"] == "python" else run_shell(step, plan["reverse"])
        print(f"=== {step['where']}: {time.monotonic() - start:.1f} s", flush=True)
        if failure:
            break
        ran += 1
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump({"ran": ran, "failure": failure}, f)
    return 0


def run_python(step: dict, namespace: dict) -> dict | None:
    print(f"=== {step['where']} (python)", flush=True)
    try:
        exec(compile(step["code"], step["where"], "exec", dont_inherit=True), namespace)
    except BaseException:                       # SystemExit too: an example that exits is a broken example
        return {"where": step["where"], "what": "python block raised", "detail": traceback.format_exc(limit=6)}
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return None


def run_shell(step: dict, reverse: list) -> dict | None:
    """One block in one bash: `cd` and variables last to the block's end; each command's status (and output) checked."""
    print(f"=== {step['where']} ({step['kind']})", flush=True)
    with tempfile.TemporaryDirectory(prefix="docs-out-") as out:
        script = ["set -o pipefail"]
        for n, cmd in enumerate(step["commands"]):
            script += ["{ " + cmd["run"], f'}} >"{out}/{n}.out" 2>&1',
                       f'__rc=$?; echo $__rc >"{out}/{n}.rc"; [ $__rc -eq {cmd["exit"]} ] || exit 0']
        proc = subprocess.Popen(["bash", "-c", "\n".join(script)], start_new_session=True)
        try:
            proc.wait(timeout=SHELL_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        finally:
            end_group(proc)                     # what the block left running in the background ends with it
        for n, cmd in enumerate(step["commands"]):
            failure = check(cmd, out, n, reverse)
            if failure:
                return failure
    return None


def end_group(proc: subprocess.Popen) -> None:
    """Waits for what the block left running (its own process group, start_new_session) to end, as cron would let
    it run on; after LINGER seconds, ends it."""
    proc.poll() is None and proc.kill()
    proc.wait()
    deadline = time.monotonic() + LINGER
    while alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(proc.pid):
        os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.1)
        alive(proc.pid)


def alive(group: int) -> bool:
    """Whether a process of the group still runs, reaping the orphans that ended."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def check(cmd: dict, out: str, n: int, reverse: list) -> dict | None:
    where = cmd["where"]
    try:
        with open(f"{out}/{n}.rc") as f:
            rc = int(f.read())
        with open(f"{out}/{n}.out", encoding="utf-8", errors="replace") as f:
            output = f.read()
    except FileNotFoundError:
        return {"where": where, "what": f"did not finish within {SHELL_TIMEOUT} s (or the shell ended)",
                "detail": cmd["run"]}
    sys.stdout.write(output)
    if rc != cmd["exit"]:
        return {"where": where, "what": f"exited {rc}, expected {cmd['exit']}", "detail": cmd["run"] + "\n" + output}
    missing = unmatched(cmd.get("output") or [], normalize(output, reverse))
    if missing is not None:
        return {"where": where, "what": f"output shown in the doc not found: {missing!r}",
                "detail": cmd["run"] + "\n--- the command printed (placeholders put back):\n" + normalize(output, reverse)}
    return None


TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:\d\d|Z)?")
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(e[+-]?\d+)?(?![\w.])")


def normalize(text: str, reverse: list) -> str:
    """What a command printed, with the test's servers, paths and prefix written back as the docs write them."""
    for actual, shown in reverse:
        text = text.replace(actual, shown)
    return text


def squash(line: str) -> str:
    """Spaces collapsed (column widths follow the data); ISO times, and decimal numbers (durations, lateness), each
    made one token."""
    return " ".join(DECIMAL.sub("N.N", TIME.sub("TIME", line)).split())


def unmatched(shown: list[str], actual: str) -> str | None:
    """The first shown line that does not match, in order, a line of the actual output ('...' is any text)."""
    lines = [squash(line) for line in actual.splitlines()]
    at = 0
    for want in shown:
        pattern = re.compile(r"\s*.*?\s*".join(re.escape(part.strip()) for part in squash(want).split("...")))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
