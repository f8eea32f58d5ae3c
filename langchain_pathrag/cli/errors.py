"""Errors of the ``pathrag`` command: one ``error: ...`` line and a non-zero exit, never a traceback
(unless ``--debug``, which also sends pathrag's debug logs to stderr)."""

from __future__ import annotations

import logging
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typing_extensions import override

from pathrag.errors import PathRAGError

try:  # recent typer ships its own copy of click
    from typer._click import Command as Command  # re-exported: a LazyCommand's real command
    from typer._click import Context
    from typer._click.exceptions import NoArgsIsHelpError, UsageError
except ImportError:  # older typer runs on click itself
    from click import Command as Command  # type: ignore[assignment]
    from click import Context  # type: ignore[assignment]
    from click.exceptions import NoArgsIsHelpError, UsageError  # type: ignore[assignment]

__all__ = ["CliError", "CliGroup", "LazyCommand", "debug_logging", "fail", "one_line"]


class CliError(PathRAGError):
    """An expected failure: shown as one ``error: ...`` line, exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def one_line(text: str, limit: int = 500) -> str:
    """``text`` on one line (whitespace runs collapsed), cut at ``limit`` characters.

    >>> one_line("a\\n  b", limit=10)
    'a b'
    """
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(message: str) -> None:
    """Print ``error: message`` to stderr."""
    typer.echo(f"error: {message}", err=True)


class LazyCommand(TyperCommand):
    """A command listed by its name and help whose options are made only when it runs: its callback returns
    the real command (see :class:`CliGroup`). For options whose help takes heavy imports to write."""

    def load(self) -> Command:
        """The real command."""
        assert self.callback is not None
        command: Command = self.callback()
        return command


class CliGroup(TyperGroup):
    """Every failure becomes one ``error:`` line and a non-zero exit; ``--debug`` (anywhere) adds the traceback.
    A :class:`LazyCommand` is replaced by its real command when it is run (or asked for its own help)."""

    @override
    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        return name, command.load() if isinstance(command, LazyCommand) else command, rest

    @override
    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        end = argv.index("--") if "--" in argv else len(argv)
        debug = "--debug" in argv[:end]
        argv = [a for a in argv[:end] if a != "--debug"] + argv[end:]
        code = self._run(
            argv, prog_name or "pathrag", complete_var, debug, windows_expand_args=windows_expand_args, **extra
        )
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, argv: list[str], prog_name: str, complete_var: str | None, debug: bool, **extra: Any) -> int:
        with warnings.catch_warnings(), debug_logging(debug):
            # reported as "(approximate)" next to token counts instead of a two-line warning
            warnings.filterwarnings("ignore", message="tiktoken encoding", category=RuntimeWarning)
            try:
                code = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
                return code if isinstance(code, int) else 0
            except NoArgsIsHelpError as exc:
                typer.echo(exc.format_message())
                return 0
            except UsageError as exc:
                where = exc.ctx.command_path if exc.ctx is not None else prog_name
                fail(f"{one_line(exc.format_message())} (see: {where} --help)")
                return exc.exit_code
            except (typer.Abort, KeyboardInterrupt):
                fail("aborted")
                return 130
            except CliError as exc:
                if debug:
                    traceback.print_exc()
                fail(str(exc))
                return exc.code
            except Exception as exc:  # the command boundary: never a traceback unless --debug
                if debug:
                    traceback.print_exc()
                hint = "" if debug else " (--debug shows the traceback)"
                fail(f"{type(exc).__name__}: {one_line(str(exc))}{hint}")
                return 1


@contextmanager
def debug_logging(debug: bool) -> Iterator[None]:
    """With ``--debug``, pathrag's own debug logs go to stderr for this run (not the HTTP clients': they
    may print request headers)."""
    if not debug:
        yield
        return
    handler = logging.StreamHandler()  # bound to this run's stderr, so it is removed afterwards
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in ("pathrag", "langchain_pathrag")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
