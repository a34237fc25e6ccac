"""schedules: the recurring schedules (DELAYQ_SCHEDULE_MODULES), their next and last slots, last job and outcome;
pause or resume one."""

from __future__ import annotations

from .. import app, cli, scheduler, schedules
from ..errors import InvalidInput

COLUMNS = ("name", "rule", "tz", "next slot", "last slot", "last job", "ran", "skipped", "missed")


def build_parser(prog: str) -> cli.Parser:
    p = cli.parser(prog, "The recurring schedules declared in DELAYQ_SCHEDULE_MODULES (and those a runner once ran, "
                         "now removed from the code): each one's next slot, last slot, last job and its outcome, and "
                         "how many slots ran, were skipped (the previous job still pending or running) or missed (due "
                         "while no runner ran). `pause NAME` and `resume NAME` act on every runner within a second.")
    p.add_argument("action", nargs="?", choices=("list", "pause", "resume"), default="list",
                   help="list (default), pause or resume")
    p.add_argument("name", nargs="?", help="the schedule to pause or resume")
    return p


def execute(args, settings) -> int:
    declared = schedules.load(settings.schedule_modules, settings.allowed_modules)
    if args.action == "list":
        if args.name:
            raise InvalidInput("list takes no name: `schedules` lists them all")
        manager = app.open_reader(settings)
        found = scheduler.status(manager, declared)
        data = {"schedules": [_data(entry) for entry in found]}
        cli.emit(args, data, table(found))
        return 0
    if not args.name:
        raise InvalidInput(f"{args.action} needs the schedule's name: {args.prog} {args.action} NAME")
    manager = app.open_ready(settings, create=False)
    act = scheduler.pause if args.action == "pause" else scheduler.resume
    changed = act(manager, declared, args.name)
    state = "paused" if args.action == "pause" else "resumed"
    already = "already paused" if args.action == "pause" else "not paused"
    cli.emit(args, {"schedule": args.name, "action": args.action, "changed": changed},
             f"schedule {args.name} {state}" if changed else f"schedule {args.name} was {already}")
    return 0


def _data(entry: dict) -> dict:
    shown = dict(entry)
    for key in ("next_slot", "last_slot", "paused_at", "last_finished_at"):
        shown[key] = schedules.shown_slot(entry[key], entry["tz"]) if key.endswith("slot") else cli.when(entry[key])
    return shown


def table(found: list[dict]) -> str:
    rows = []
    for e in found:
        last_job = "" if e["last_job"] is None else f"{e['last_job']} {e['last_status'] or 'purged'}"
        next_slot = "removed from the code" if not e["declared"] else "paused" if e["paused"] else schedules.shown_slot(e["next_slot"], e["tz"])
        rows.append([e["name"], e["rule"] or "", e["tz"] or "", next_slot or "", schedules.shown_slot(e["last_slot"], e["tz"]) or "",
                     last_job, str(e["ran"]), str(e["skipped"]), str(e["missed"])])
    return cli.table(COLUMNS, rows, "(no schedule: declare them with delayq.schedule(...) in the modules named in "
                                    "DELAYQ_SCHEDULE_MODULES)")
