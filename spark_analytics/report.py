"""The audit's outputs: summary.json, findings as Parquet, and one self-contained HTML page.

The page is rendered from Jinja2 templates shipped in the package (templates/), with plotly charts whose JS is
inlined once: one file that opens offline, charts zoomable and hoverable. jinja2 and plotly come with the `spark`
extra; without them the report fails with ReportError (a clear message), never a traceback.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

# .checks (protocol/, the decision module) is imported where it is used: the CLI checks REPORT_MODULES before it
# starts the JVM, and what it imports before then delays the JVM's start
from .report_charts import ACTIONS, COLORS, PLOTLY_CONFIG, SHORT, actions_figure, phases_figure, timeline_figure

REPORT_MODULES = ("jinja2", "plotly")


class ReportError(Exception):
    """The HTML report cannot be rendered (its libraries are missing)."""


def require_report_modules() -> None:
    """Raise ReportError naming what is missing and how to install it (checked before the audit's minutes)."""
    missing = [m for m in REPORT_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ReportError(f"the HTML report needs {' and '.join(missing)} (not installed here): "
                          f"pip install 'binlogd[spark]' (or pip install {' '.join(missing)})")


def write_outputs(out_dir: Path, summary: dict[str, Any], findings: list[tuple],
                  timeline: dict[int, list[dict[str, int]]]) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out_dir / "summary.json", "html": out_dir / "report.html",
             "findings": out_dir / "findings.parquet"}
    paths["summary"].write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    write_findings(paths["findings"], findings)
    paths["html"].write_text(render_html(summary, timeline))
    return paths


# FINDING_DDL's columns as Arrow types
_ARROW_TYPES = {"INT": "int32", "BIGINT": "int64", "STRING": "string"}


def write_findings(path: Path, findings: list[tuple]) -> None:
    """findings.parquet as Spark writes it (a directory: one part file and _SUCCESS, FINDING_DDL's schema),
    written by pyarrow from the tuples the driver holds: a Spark write job of its own cost a small audit ~1 s."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .checks import FINDING_COLUMNS

    schema = pa.schema([(n, getattr(pa, _ARROW_TYPES[t])()) for n, t in FINDING_COLUMNS])
    table = pa.Table.from_pylist([dict(zip(schema.names, f, strict=True)) for f in findings], schema=schema)
    if path.is_dir():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    pq.write_table(table, path / "part-00000.parquet")
    (path / "_SUCCESS").touch()


def _chart(fig: dict[str, Any] | None, div_id: str) -> dict[str, Any] | None:
    """A figure for the template: its div id, height and the JSON plotly.js draws (`</` escaped for <script>)."""
    if fig is None:
        return None
    spec = json.dumps([fig["data"], fig["layout"], PLOTLY_CONFIG], separators=(",", ":")).replace("</", "<\\/")
    return {"id": div_id, "height": fig["layout"]["height"], "json": spec}


def _where(f: dict[str, Any]) -> str:
    return f"{f['file']}:{f['pos']}" if f["file"] else ("" if f["pos"] is None else f"pos {f['pos']}")


def render_html(summary: dict[str, Any], timeline: dict[int, list[dict[str, int]]]) -> str:
    require_report_modules()
    import jinja2
    import plotly.offline

    from .checks import CHECK_NAMES

    env = jinja2.Environment(loader=jinja2.PackageLoader("binlogd.spark_analytics", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["n"] = lambda v: "?" if v is None else f"{v:,}"
    errors = sum(c["errors"] for c in summary["checks"])
    charts = {"actions": _chart(actions_figure(summary), "chart-actions"),
              "timeline": _chart(timeline_figure(summary, timeline), "chart-timeline"),
              "phases": _chart(phases_figure(summary), "chart-phases")}
    findings = [dict(f, where=_where(f), check_name=CHECK_NAMES.get(f["check"], "?")) for f in summary["findings"]]
    return env.get_template("report.html.j2").render(
        s=summary, errors=errors, warnings=summary["findings_total"] - errors, findings=findings, charts=charts,
        actions=(*ACTIONS, "error"), labels=SHORT, colors=COLORS, plotly_js=plotly.offline.get_plotlyjs(),
        empty_gtids={"transactions": 0, "gtids": [], "gtids_truncated": False, "content_bytes": 0})
