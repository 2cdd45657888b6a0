"""Generate the man pages in man/ from the CLI definition (the typer/click command tree).

    python scripts/gen_man.py          # rewrite man/*.1
    python scripts/gen_man.py --check  # exit 1 if a committed page differs from a fresh one

One page for `trgc` and one per (sub)command, named `trgc-compile.1`, `trgc-tokenizer-build.1`,
and so on. The pages hold no date, so regeneration is reproducible.
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import typer.main
from typer import Context

from trgc import __version__
from trgc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
MAN_DIR = ROOT / "man"

EXIT_STATUS = [
    ("0", "success"),
    ("1", "a check found a difference (diff, check rejected, replay divergence, verify mismatch)"),
    ("2", "invalid input or usage; the diagnostic on stderr names a stable error code"),
    ("3", "a limit was exceeded (error codes E_LIMIT_*)"),
    ("4", "generate stopped at --max-tokens: its output is incomplete"),
    ("70", "internal error (a bug in trgc)"),
    ("130", "interrupted by Ctrl-C; generate first writes a cancellation record to its trace"),
]


CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")  # single backticks; ``` stays literal


def roff_escape(text: str) -> str:
    """Escape text for roff: backslashes, hyphens and control characters at line starts; the
    help texts' `code` spans (markdown backticks) become bold."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = CODE_SPAN.sub(r"\\fB\1\\fR", text)
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def paragraphs(text: str) -> str:
    blocks = [" ".join(block.split()) for block in inspect.cleandoc(text or "").split("\n\n")]
    return "\n.PP\n".join(roff_escape(block) for block in blocks if block)


def short_summary(help_text: str) -> str:
    """The NAME-section line: the first sentence, cut before a colon."""
    first = " ".join(inspect.cleandoc(help_text).split("\n\n")[0].split())
    return first.split(". ")[0].split(":")[0].rstrip(".")


def is_group(command) -> bool:
    return hasattr(command, "commands")


def walk(command, path: tuple[str, ...]):
    """Yield (path, command) for the command and every subcommand, in sorted order."""
    yield path, command
    if is_group(command):
        for name in sorted(command.commands):
            yield from walk(command.commands[name], (*path, name))


def option_lines(command, ctx: Context) -> list[str]:
    out = []
    for param in command.get_params(ctx):
        if param.param_type_name == "argument":
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        out.append(".TP")
        out.append(f"\\fB{roff_escape(names)}\\fR")
        out.append(roff_escape(" ".join(help_text.split())) if help_text else "")
    return out


def argument_lines(command) -> list[str]:
    out = []
    for param in command.params:
        if param.param_type_name == "argument":
            out.append(".TP")
            out.append(f"\\fI{roff_escape(param.metavar or param.name.upper())}\\fR")
            out.append(roff_escape(" ".join((getattr(param, "help", None) or "").split())))
    return out


def render(path: tuple[str, ...], command, parent) -> str:
    ctx = Context(command, info_name=path[-1], parent=parent)
    title = "-".join(path).upper()
    summary = short_summary(command.help or "")
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [
        f'.TH {roff_escape(title)} 1 "" "trgc {__version__}" "trgc manual"',
        ".SH NAME",
        f"{roff_escape('-'.join(path))} \\- {roff_escape(summary)}",
        ".SH SYNOPSIS",
        f"\\fB{roff_escape(' '.join(path))}\\fR {roff_escape(usage)}",
        ".SH DESCRIPTION",
        paragraphs(command.help or ""),
    ]
    arguments = argument_lines(command)
    if arguments:
        lines += [".SH ARGUMENTS", *arguments]
    options = option_lines(command, ctx)
    if options:
        lines += [".SH OPTIONS", *options]
    if is_group(command):
        lines.append(".SH COMMANDS")
        for name in sorted(command.commands):
            sub = command.commands[name]
            lines += [
                ".TP",
                f"\\fB{roff_escape(name)}\\fR",
                roff_escape(sub.get_short_help_str(limit=200)),
            ]
    lines.append(".SH EXIT STATUS")
    for status, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{status}\\fR", roff_escape(meaning)]
    see_also = ["trgc(1)"] if len(path) > 1 else []
    if is_group(command):
        see_also += [f"{'-'.join((*path, name))}(1)" for name in sorted(command.commands)]
    if see_also:
        lines += [".SH SEE ALSO", ", ".join(roff_escape(s) for s in see_also)]
    return "\n".join(line for line in lines if line is not None) + "\n"


def pages() -> dict[str, str]:
    root = typer.main.get_command(app)
    contexts: dict = {}
    out: dict[str, str] = {}
    for path, command in walk(root, ("trgc",)):
        parent = contexts.get(path[:-1])
        out[f"{'-'.join(path)}.1"] = render(path, command, parent)
        contexts[path] = Context(command, info_name=path[-1], parent=parent)
    return out


def main(argv: list[str]) -> int:
    fresh = pages()
    if "--check" in argv:
        existing = {p.name for p in MAN_DIR.glob("*.1")}
        stale = sorted(
            name
            for name, text in fresh.items()
            if not (MAN_DIR / name).exists() or (MAN_DIR / name).read_text(encoding="utf-8") != text
        )
        extra = sorted(existing - set(fresh))
        for name in stale:
            print(f"stale: man/{name}", file=sys.stderr)
        for name in extra:
            print(f"not generated by the CLI: man/{name}", file=sys.stderr)
        if stale or extra:
            print("run: python scripts/gen_man.py", file=sys.stderr)
            return 1
        return 0
    MAN_DIR.mkdir(exist_ok=True)
    for old in MAN_DIR.glob("*.1"):
        if old.name not in fresh:
            old.unlink()
    for name, text in fresh.items():
        (MAN_DIR / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
