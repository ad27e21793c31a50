"""The ``expost`` command documents itself: ``--version`` and a help string for every option of
every subcommand (issue 37, item 4: ``--seed``, ``--task`` and ``--rounds`` had none)."""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

import expost
from expost.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def parsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser under ``parser`` (itself included), named by its command line (``prog``)."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers(sub)


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    """The options, positionals and subcommands, anywhere under ``parser``, without help."""
    missing = []
    for path, p in parsers(parser):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {choice.dest for choice in action._choices_actions if choice.help}
                missing += [f"{path} {name}" for name in action.choices if name not in helped]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_option_of_every_subcommand_has_help() -> None:
    assert undocumented(build_parser()) == []


def test_the_walk_reaches_every_subcommand() -> None:
    names = {path for path, _ in parsers(build_parser())}
    assert {"expost reproduce erm", "expost ledger init", "expost audit", "expost prove"} <= names


def test_a_planted_option_without_help_is_found() -> None:
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--documented", help="it says what it does")
    sub = parser.add_subparsers(dest="command")
    run = sub.add_parser("run", help="run it")
    run.add_argument("--seed", type=int, default=0)  # the kind the issue found
    sub.add_parser("quiet")  # a subcommand without help
    assert undocumented(parser) == ["tool quiet", "tool run --seed"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"expost {declared}"
    assert expost.__version__ == declared
