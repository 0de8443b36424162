"""Split the oracle's workload files into the statements to send, as the mariadb client would send them.

Comments and the whitespace around statements are dropped: MariaDB logs the statement text it receives
(Annotate_rows, statement-format QUERY events), so anything else sent along would change event sizes.
Enough SQL for the workload files: ';' ends a statement outside quotes, '-- ' and '#' start a comment.
"""

from __future__ import annotations


def statements(script: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    quote = ""
    i = 0
    while i < len(script):
        c = script[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(script):
                cur.append(script[i + 1])
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
            cur.append(c)
        elif c == "#" or (script.startswith("--", i) and script[i + 2 : i + 3] in (" ", "\t", "\n", "")):
            nl = script.find("\n", i)
            i = len(script) if nl < 0 else nl
            continue
        elif c == ";":
            _flush(cur, out)
        else:
            cur.append(c)
        i += 1
    if quote:
        raise ValueError(f"unterminated {quote} quote in the script")
    _flush(cur, out)
    return out


def _flush(cur: list[str], out: list[str]) -> None:
    stmt = "".join(cur).strip()
    if stmt:
        out.append(stmt)
    cur.clear()
