"""``skillwire sim run|replay|report``: governed simulations (spec 002, docs/sim.md)."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from skillwire.sim.definitions import Experiment
    from skillwire.sim.proposers import Proposer

sim_app = typer.Typer(
    help="Governed simulations: agents x steps, every decision validated and audited.",
    no_args_is_help=True,
)

ProfileOption = Annotated[
    str | None,
    typer.Option("--governance", help="Governance profile (strict, relaxed, disabled, ...)."),
]


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar per step when standard output is a terminal, else nothing."""
    if not sys.stdout.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def advance(step: int, total: int) -> None:
            bar.update(task, completed=step, total=total)

        yield advance


def _proposer(spec: str, experiment: Experiment) -> tuple[Proposer, Callable[[], None]]:
    """The proposer ``--model`` names, and how to close it."""
    from skillwire.core.errors import UsageError
    from skillwire.sim.proposers import ChatProposer, OfflineProposer, ScriptedProposer

    if spec == "offline":
        offline = OfflineProposer(
            experiment.seed,
            experiment.temperature,
            experiment.response_fields,
            experiment.delimiters,
        )
        return offline, lambda: None
    if spec.startswith("scripted:"):
        path = Path(spec.removeprefix("scripted:"))
        if not path.is_file():
            raise UsageError(f"no script file {path}")
        return ScriptedProposer.from_file(path), lambda: None
    from skillwire.assembly import choose_models

    choice = choose_models(spec)
    models = [choice.model] + ([choice.gate_model] if choice.gate_model is not choice.model else [])

    async def close() -> None:
        for model in models:
            await model.aclose()

    return ChatProposer(choice.model), lambda: asyncio.run(close())


@sim_app.command("run")
def run(
    experiment: Annotated[Path, typer.Argument(help="experiment.yaml, or its folder.")],
    out: Annotated[Path, typer.Option("--out", help="Run directory (audit.jsonl, run.json).")],
    model: Annotated[
        str | None,
        typer.Option("--model", help="offline (default), a configured model, or scripted:FILE."),
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of every draw.")] = None,
    agents: Annotated[
        int | None, typer.Option("--agents", min=1, help="Only the first K agents.")
    ] = None,
    steps: Annotated[int | None, typer.Option("--steps", min=1, help="Steps to run.")] = None,
    governance: ProfileOption = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Model calls at once per step.")
    ] = None,
) -> None:
    """Run an experiment: every agent decides each step through the validator chain."""
    from skillwire.cli_jobs import guard
    from skillwire.sim import load_experiment
    from skillwire.sim.runner import RunSettings
    from skillwire.sim.runs import run_experiment

    def body() -> None:
        exp = load_experiment(experiment)
        if seed is not None:
            exp.seed = seed
        settings = RunSettings(
            governance or exp.governance,
            exp.seed,
            steps or exp.steps,
            agents,
            concurrency or exp.concurrency,
        )
        spec = model or exp.model
        proposer, close = _proposer(spec, exp)
        started = time.perf_counter()
        try:
            with _progress(f"{exp.name} ({settings.profile})") as progress:
                result = asyncio.run(
                    run_experiment(exp, proposer, settings, out, model_spec=spec, progress=progress)
                )
        finally:
            close()
        elapsed = time.perf_counter() - started
        typer.echo(
            f"{result.agents} agents x {result.steps} steps, {result.records} decision records "
            f"in {elapsed:.2f} s ({result.steps / elapsed:.1f} steps/s; {settings.profile}, "
            f"model {spec}): {out / 'audit.jsonl'}"
        )

    guard(body)


@sim_app.command("replay")
def replay(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `sim run`.")],
    governance: ProfileOption = None,
) -> None:
    """Rerun from the recorded model outputs. Same profile: exit 1 unless the audit is
    byte-identical. Another profile: what its rules would have done with the same answers."""
    from skillwire.cli_jobs import guard
    from skillwire.sim.runs import replay_run

    def body() -> int:
        with _progress(f"replay {run_dir}") as progress:
            outcome = asyncio.run(replay_run(run_dir, governance, progress=progress))
        where = outcome.out / "audit.jsonl"
        if outcome.counterfactual:
            typer.echo(
                f"counterfactual replay under '{outcome.profile}': "
                f"{outcome.result.records} records in {where}"
            )
            typer.echo(
                "calls the run never made fell back to the default skill (marked replay.unrecorded)"
            )
            return 0
        if outcome.identical:
            typer.echo(
                f"replay: the audit is byte-identical ({outcome.result.records} records, {where})"
            )
            return 0
        typer.echo(
            f"replay: the audit differs from the run's, first at line "
            f"{outcome.first_difference} ({where})"
        )
        return 1

    raise typer.Exit(guard(body))


@sim_app.command("report")
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory of `sim run`.")]) -> None:
    """A table per step (shares, rejections by rule, retries, fallbacks), report.csv and
    report.png."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from skillwire.cli_jobs import guard
    from skillwire.sim.report import build_report, write_chart, write_csv
    from skillwire.sim.runs import read_run

    def body() -> None:
        run = read_run(run_dir)
        tracked, rows = build_report(run_dir)
        table = Table(
            title=f"{escape(str(run['experiment']['name']))} ({escape(str(run['governance']))})"
        )
        for col in (
            "step",
            "deciding",
            *tracked,
            "retries",
            "fallbacks",
            "warnings",
            "rejections by rule",
        ):
            table.add_column(col)
        for row in rows:
            rules = ", ".join(f"{k} {v}" for k, v in sorted(row.rejections.items()))
            table.add_row(
                str(row.step),
                str(row.deciding),
                *(f"{row.shares.get(k, 0.0):.0%}" for k in tracked),
                str(row.retries),
                str(row.fallbacks),
                str(row.warnings),
                escape(rules or "-"),
            )
        Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(table)
        write_csv(tracked, rows, run_dir / "report.csv")
        typer.echo(f"wrote {run_dir / 'report.csv'}")
        skipped = write_chart(tracked, rows, run_dir / "report.png", str(run["experiment"]["name"]))
        if skipped:
            typer.echo(f"chart skipped: {skipped}")
        else:
            typer.echo(f"wrote {run_dir / 'report.png'}")

    guard(body)


def split_experiments(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """``(experiments, the other paths)``: ``skillwire check`` loads experiments (an
    experiment.yaml, or the reference framework's folder) as experiments."""
    from skillwire.sim import is_experiment

    experiments = [p for p in paths if is_experiment(p)]
    return experiments, [p for p in paths if p not in experiments]


def check_experiments(
    paths: list[Path], *, as_json: bool, explain: bool, strict: bool, verbose: bool
) -> bool:
    """Load each experiment and print its findings (file:line) and, with ``explain``,
    its rules and their CEL. True when one failed (an error, or a warning under
    ``strict``)."""
    import json

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from skillwire.core.issues import Severity
    from skillwire.sim import read_experiment
    from skillwire.sim.explain import explain_experiment

    failed = False
    documents: list[dict[str, object]] = []
    console = Console(highlight=False, width=140 if not sys.stdout.isatty() else None)
    for path in paths:
        found = read_experiment(path)
        errors = sum(1 for i in found.issues if i.severity is Severity.ERROR)
        warnings = sum(1 for i in found.issues if i.severity is Severity.WARNING)
        failed = failed or errors > 0 or (strict and warnings > 0)
        rules = explain_experiment(found.experiment) if explain and found.experiment else None
        if as_json:
            doc: dict[str, object] = {
                "experiment": str(path),
                "ok": errors == 0,
                "issues": [i.to_dict() for i in found.issues],
            }
            if rules is not None:
                doc["explain"] = rules
            documents.append(doc)
            continue
        for issue in found.issues:
            if issue.severity is Severity.INFO and not verbose:
                continue
            color = {"error": "red", "warning": "yellow", "info": "cyan"}[str(issue.severity)]
            console.print(f"[{color}]{escape(str(issue))}[/]", soft_wrap=True)
        verdict = "failed" if errors or (strict and warnings) else "ok"
        console.print(
            f"experiment {escape(str(path))}: {errors} errors, {warnings} warnings: {verdict}"
        )
        if rules is not None:
            table = Table(
                title=f"rules of experiment {escape(rules['experiment'])}", show_lines=True
            )
            for col in ("rule", "treated as", "applies to", "runs", "source"):
                table.add_column(col, overflow="fold")
            for rule in rules["rules"]:
                table.add_row(
                    escape(rule["text"]),
                    escape(rule["kind"]),
                    escape(", ".join(rule["skills"]) or "-"),
                    escape(rule["expression"] or "-"),
                    escape(rule["source"]),
                )
            console.print(table)
    if as_json:
        typer.echo(json.dumps({"experiments": documents}, indent=2))
    return failed
