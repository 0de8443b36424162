"""MariaDB option files (my.cnf) for binlogd's command lines: `binlogd serve` reads `[binlogd]`, `binlogd-apply`
reads `[binlogd-apply]`.

As MariaDB's programs do: `--no-defaults`, `--print-defaults`, `--defaults-file=FILE` and
`--defaults-extra-file=FILE` come first; in a file, `[group]` lines, `name=value` or a bare `name` with the command
line's option names (dashes and underscores interchangeable, a `loose-` prefix makes an unknown option a warning),
`#` and `;` comment lines, `#` after a value, quoted values ('...' or "...", backslash escapes), `!include FILE` and
`!includedir DIR` (its `*.cnf` files in name order; relative paths are relative to the including file). The files'
options go before the command line's, so the command line wins; an option that may be repeated (binlogd-apply's
`--channel`) gets the files' values and the command line's.

binlogd reads no option file unless one is named: it is not a MariaDB server, and a [mysqld] or [client] group in
/etc/my.cnf is not meant for it. Unlike MariaDB, a missing `!include` file is an error rather than silence.
Every option is checked against the program's parser before it starts, so a typo fails at start with the file, the
line and the option (exit status 2).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

TRUE_WORDS = frozenset({"1", "on", "true", "yes"})
FALSE_WORDS = frozenset({"0", "off", "false", "no"})
LEADING = ("--no-defaults", "--print-defaults", "--defaults-file", "--defaults-extra-file")
MAX_INCLUDE_DEPTH = 10
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", "\\": "\\", '"': '"', "'": "'"}


class OptionFileError(Exception):
    """A file that cannot be read or holds a bad line or option; the message names the file and line."""


@dataclass(frozen=True)
class FileOption:
    name: str  # as written (dashes or underscores)
    value: str | None  # None: a bare flag
    file: Path
    line: int
    group: str

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Leading:
    """The option-file options at the front of a command line."""

    no_defaults: bool = False
    print_defaults: bool = False
    files: list[tuple[str, Path]] = field(default_factory=list)  # (option, path) in the order read


def split_leading(args: list[str]) -> tuple[Leading, list[str]]:
    """Take --no-defaults, --print-defaults, --defaults-file[=]F, --defaults-extra-file[=]F off the front."""
    lead = Leading()
    i = 0
    while i < len(args):
        a = args[i]
        opt, eq, val = a.partition("=")
        if a == "--no-defaults":
            lead.no_defaults = True
        elif a == "--print-defaults":
            lead.print_defaults = True
        elif opt in ("--defaults-file", "--defaults-extra-file"):
            if not eq:
                if i + 1 >= len(args):
                    raise OptionFileError(f"{opt} needs a file name")
                i += 1
                val = args[i]
            lead.files.append((opt, Path(val)))
        else:
            break
        i += 1
    # the defaults file first, then the extra file, as MariaDB reads them
    lead.files.sort(key=lambda f: f[0] != "--defaults-file")
    return lead, args[i:]


def _unquote(raw: str, where: str) -> str:
    """A value: quoted ('...' / "...") up to its closing quote, else up to a `#` comment; escapes resolved."""
    out: list[str] = []
    quote = raw[0] if raw[:1] in ("'", '"') else None
    i = 1 if quote else 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            out.append(_ESCAPES.get(raw[i + 1], "\\" + raw[i + 1]))
            i += 2
            continue
        if quote and c == quote:
            rest = raw[i + 1 :].strip()
            if rest and rest[0] not in "#;":
                raise OptionFileError(f"{where}: text after the closing quote: {rest!r}")
            return "".join(out)
        if not quote and c == "#":
            break
        out.append(c)
        i += 1
    if quote:
        raise OptionFileError(f"{where}: unterminated quoted value")
    return "".join(out).strip()


def read_file(path: Path, groups: tuple[str, ...], stack: tuple[Path, ...] = ()) -> list[FileOption]:
    """The options of `groups` in `path` and the files it includes, in order."""
    try:
        real = path.resolve()
        text = real.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, RuntimeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise OptionFileError(f"cannot read option file {path}: {why}") from None
    stack = (*stack, real)
    out: list[FileOption] = []
    group: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        where = f"{path}:{n}"
        s = line.strip()
        if not s or s[0] in "#;":
            continue
        if s.startswith("!"):
            word, _, arg = s.partition(" ")
            out += _include(word, arg.strip(), path, where, groups, stack)
            continue
        if s.startswith("["):
            if not s.endswith("]") or not s[1:-1].strip():
                raise OptionFileError(f"{where}: bad group line {s!r} (expected [name])")
            group = s[1:-1].strip().lower()
            continue
        if group is None:
            raise OptionFileError(f"{where}: option {s!r} before any [group] line")
        if group not in groups:
            continue
        name, eq, raw = s.partition("=")
        name = name.strip()
        if not name or any(c.isspace() for c in name):
            raise OptionFileError(f"{where}: bad option line {s!r}")
        out.append(FileOption(name, _unquote(raw.strip(), where) if eq else None, path, n, group))
    return out


def _include(word: str, arg: str, path: Path, where: str, groups: tuple[str, ...],
             stack: tuple[Path, ...]) -> list[FileOption]:
    if word not in ("!include", "!includedir") or not arg:
        raise OptionFileError(f"{where}: unknown directive {word!r} (known: !include FILE, !includedir DIR)")
    target = Path(arg) if Path(arg).is_absolute() else path.parent / arg
    if len(stack) > MAX_INCLUDE_DEPTH:
        raise OptionFileError(f"{where}: includes nested deeper than {MAX_INCLUDE_DEPTH} files")
    if word == "!includedir":
        if not target.is_dir():
            raise OptionFileError(f"{where}: !includedir {arg}: not a directory")
        files = sorted(p for p in target.iterdir() if p.suffix == ".cnf" and p.is_file())
    else:
        if not target.is_file():
            raise OptionFileError(f"{where}: !include {arg}: no such file")
        files = [target]
    out: list[FileOption] = []
    for f in files:
        if f.resolve() in stack:
            chain = " -> ".join(str(p) for p in (*stack, f.resolve()))
            raise OptionFileError(f"{where}: !include cycle: {chain}")
        out += read_file(f, groups, stack)
    return out


def to_arguments(options: list[FileOption], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """The command-line arguments the options stand for, each checked against `parser`'s options (type, choices);
    and warnings (unknown `loose-` options)."""
    actions = {s: a for a in parser._actions for s in a.option_strings if s.startswith("--")}
    args: list[str] = []
    warnings: list[str] = []
    for o in options:
        name = o.name.replace("_", "-")
        loose = name.startswith("loose-")
        if loose:
            name = name[len("loose-") :]
        opt = f"--{name}"
        action = actions.get(opt)
        if action is None or opt in LEADING or isinstance(action, argparse._HelpAction):
            if loose:
                warnings.append(f"{o.where()}: unknown option '{o.name}' in [{o.group}] ignored (loose-)")
                continue
            raise OptionFileError(f"{o.where()}: unknown option '{o.name}' in [{o.group}]")
        if action.nargs == 0:  # a flag: bare, or a boolean word
            v = (o.value or "1").strip().lower()
            if v in TRUE_WORDS:
                args.append(opt)
            elif v not in FALSE_WORDS:
                raise OptionFileError(f"{o.where()}: option '{o.name}' is a flag: give it bare or as {o.name}=1 / "
                                      f"{o.name}=0, not {o.value!r}")
            continue
        if o.value is None:
            raise OptionFileError(f"{o.where()}: option '{o.name}' needs a value ({o.name}=VALUE)")
        value: object = o.value
        if callable(action.type):
            try:
                value = action.type(o.value)
            except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
                why = {int: "not an integer", float: "not a number"}.get(action.type) or str(e) or "not valid"  # type: ignore[call-overload]
                raise OptionFileError(f"{o.where()}: bad value {o.value!r} for option '{o.name}': {why}") from None
        if action.choices is not None and value not in action.choices:
            raise OptionFileError(f"{o.where()}: bad value {o.value!r} for option '{o.name}' (choose from "
                                  f"{', '.join(map(str, action.choices))})")
        args.append(f"{opt}={o.value}")
    return args, warnings


def expand(args: list[str], parser: argparse.ArgumentParser, group: str, prog: str) -> list[str] | None:
    """`args` with the named option files' options of `group` in front (checked against `parser`), or None when
    `--print-defaults` printed them (the caller exits 0). Raises OptionFileError."""
    import sys

    lead, rest = split_leading(args)
    options: list[FileOption] = []
    if not lead.no_defaults:
        for opt, path in lead.files:
            if not path.is_file():
                raise OptionFileError(f"{opt}: could not open required defaults file: {path}")
            options += read_file(path, (group,))
    file_args, warnings = to_arguments(options, parser)
    for w in warnings:
        print(f"{prog}: warning: {w}", file=sys.stderr)
    if lead.print_defaults:
        print(f"{prog} would have been started with the following arguments:\n{' '.join(file_args)}")
        return None
    return [*file_args, *rest]
