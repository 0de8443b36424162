"""The audit's outputs: summary.json, findings as Parquet, and one self-contained HTML page (inline SVG, no network)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from .checks import CHECK_NAMES, FINDING_DDL

# `skipped` (groups a GTID connect skipped: the replica has them) is grey, never the red of withheld holes
COLORS = {"sent": "#4c9a6a", "hole": "#d9534f", "skipped": "#a8a8a8", "dummy": "#f0ad4e", "begin": "#5b8fd9",
          "renamed": "#2aa1b3", "fake": "#9b7fc7", "error": "#333333"}
ACTIONS = ("sent", "hole", "skipped", "dummy", "begin", "renamed", "fake")


def write_outputs(spark: Any, out_dir: Path, summary: dict[str, Any], findings: list[tuple],
                  timeline: dict[int, list[dict[str, int]]]) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out_dir / "summary.json", "html": out_dir / "report.html",
             "findings": out_dir / "findings.parquet"}
    paths["summary"].write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")
    spark.createDataFrame(findings, FINDING_DDL).coalesce(1).write.mode("overwrite").parquet(str(paths["findings"]))
    paths["html"].write_text(render_html(summary, timeline))
    return paths


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _bars(conn: dict[str, Any], key: str, width: int = 420) -> str:
    """Horizontal stacked bar of one connection's events or bytes per action, with a legend line."""
    vals = conn[key]
    total = sum(vals.get(a, 0) for a in ACTIONS) or 1
    x = 0.0
    parts = []
    for a in ACTIONS:
        v = vals.get(a, 0)
        if not v:
            continue
        w = max(1.0, width * v / total)
        parts.append(f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="18" fill="{COLORS[a]}">'
                     f'<title>{a}: {v:,}</title></rect>')
        x += w
    legend = " ".join(f'<span class="k" style="background:{COLORS[a]}"></span>{a} {vals.get(a, 0):,}'
                      for a in ACTIONS if vals.get(a, 0))
    return (f'<svg width="{width}" height="18" role="img">{"".join(parts)}</svg>'
            f'<div class="legend">{legend}</div>')


def _timeline_svg(summary: dict[str, Any], timeline: dict[int, list[dict[str, int]]], width: int = 1100) -> str:
    """One row per connection across the whole binlog (files side by side): where events were sent or filtered."""
    files = summary["binlog"]["files"]
    total = sum(f["end"] for f in files) or 1
    conns = summary["connections"]
    row_h, top, left = 26, 28, 150
    plot_w = width - left - 10
    h = top + row_h * len(conns) + 10
    out = [f'<svg width="{width}" height="{h}" role="img" class="timeline">']
    x = float(left)
    for f in files:  # file boundaries
        w = plot_w * f["end"] / total
        out.append(f'<line x1="{x:.1f}" y1="12" x2="{x:.1f}" y2="{h - 6}" stroke="#bbb" stroke-dasharray="3,3"/>')
        out.append(f'<text x="{x + 3:.1f}" y="20" class="small">{_e(f["file"])}</text>')
        x += w
    for i, c in enumerate(conns):
        y = top + i * row_h
        label = f'#{c["connection_id"]} cap {c["capability"]}{" skip" if c["skip_replication"] else ""}'
        out.append(f'<text x="4" y="{y + 14}" class="small">{_e(label)}</text>')
        slices = c.get("timeline") or timeline.get(c["connection_id"], [])
        n = len(slices) or 1
        sw = plot_w / n
        for j, sl in enumerate(slices):
            if not sl:
                continue
            filtered = sum(v for a, v in sl.items() if a != "sent")
            a = max((a for a in sl if a != "sent"), key=lambda k: sl[k]) if filtered else "sent"
            frac = filtered / max(1, sum(sl.values()))
            hgt = 18 if a == "sent" else max(5.0, 18 * frac)
            tip = ", ".join(f"{k} {v:,}" for k, v in sorted(sl.items()))
            out.append(f'<rect x="{left + j * sw:.1f}" y="{y + 18 - hgt:.1f}" width="{max(sw - 0.3, 0.8):.1f}" '
                       f'height="{hgt:.1f}" fill="{COLORS.get(a, "#999")}"><title>{_e(tip)}</title></rect>')
    out.append("</svg>")
    return "".join(out)


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1150px}
h1{margin-bottom:4px} .sub{color:#666;margin-top:0}
.badge{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;font-weight:600}
.ok{background:#4c9a6a}.bad{background:#d9534f}
table{border-collapse:collapse;margin:8px 0 18px 0;font-size:13px} table.wide{width:100%}
td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top} th{background:#f4f4f4} td.n{text-align:right;font-variant-numeric:tabular-nums}
.k{display:inline-block;width:10px;height:10px;margin:0 3px 0 8px;border-radius:2px}
.legend{font-size:11px;color:#444;margin:2px 0 6px 0} .small{font-size:11px;fill:#444}
.sev-error{color:#b52b27;font-weight:600}.sev-warning{color:#a66d00}.sev-info{color:#666}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px}
"""


def render_html(summary: dict[str, Any], timeline: dict[int, list[dict[str, int]]]) -> str:
    ok = summary["consistent"]
    h: list[str] = [f"<!doctype html><html><head><meta charset='utf-8'><title>binlogd audit</title>"
                    f"<style>{CSS}</style></head><body>"]
    h.append("<h1>binlogd audit</h1>")
    h.append(f"<p class='sub'>{_e(summary['generated_at'])} · binlogs <code>{_e(summary['binlog_dir'])}</code> "
             f"({summary['binlog']['events']:,} events in {len(summary['binlog']['files'])} files) · ledger "
             f"<code>{_e(summary['ledger_dir'])}</code> ({summary['ledger']['records']:,} records)</p>")
    errors = sum(c["errors"] for c in summary["checks"])
    h.append(f"<p><span class='badge {'ok' if ok else 'bad'}'>{'CONSISTENT' if ok else 'FINDINGS'}</span> "
             f"{errors} error(s), {summary['findings_total'] - errors} warning/info finding(s), "
             f"{len(summary['connections'])} connection(s), {summary['seconds']} s</p>")
    # checks
    h.append("<h2>Checks</h2><table><tr><th>#</th><th>check</th><th>errors</th><th>warnings</th></tr>")
    for c in summary["checks"]:
        cls = "sev-error" if c["errors"] else ""
        h.append(f"<tr><td>{c['check']}</td><td>{_e(c['name'])}</td><td class='n {cls}'>{c['errors']}</td>"
                 f"<td class='n'>{c['warnings']}</td></tr>")
    h.append("</table>")
    # per connection
    h.append("<h2>Connections</h2><table class='wide'><tr><th>conn</th><th>replica</th><th>start → end</th>"
             "<th>events per action</th><th>bytes per action</th><th>behind at end</th><th>withheld</th>"
             "<th>skipped at GTID connect</th></tr>")
    for c in summary["connections"]:
        cap = f"cap {c['capability']}" + ("" if c["capability_set"] else " (unset)")
        rep = (f"server_id {c['server_id']}<br>{_e(cap)}<br>skip_replication {'on' if c['skip_replication'] else 'off'}"
               f"<br>dump flags {c['dump_flags']} · {_e(c['compat'])}"
               + (f"<br>checksums: {_e(c['transcode'])}" if c.get("transcode") else "")
               + f"<br><small>{_e(c['peer'])}</small>")
        se = (f"{_e(c['start']['file'])}:{c['start']['pos']}"
              + (f"<br>gtid {_e(c['start']['gtid'])}" if c["start"]["gtid"] else "")
              + f"<br>→ {_e(c['end']['file'])}:{c['end']['pos']}<br>({_e(c['end']['reason'] or 'no close record')})")
        b = c["behind"] or {}
        beh = f"{b.get('events', '?')} events<br>{b.get('bytes', '?')} bytes"
        w = c["withheld"]
        gt = ", ".join(w["gtids"][:8]) + (" …" if len(w["gtids"]) > 8 or w.get("gtids_truncated") else "")
        wh = f"{w['transactions']} trx, {w['content_bytes'] or 0:,} bytes<br><small>{_e(gt)}</small>"
        k = c.get("skipped_at_connect") or {"transactions": 0, "gtids": [], "content_bytes": 0}
        sk = (f"{k['transactions']} trx, {k['content_bytes'] or 0:,} bytes<br><small>{_e(', '.join(k['gtids'][:8]))}"
              f"{' …' if len(k['gtids']) > 8 else ''}</small>")
        h.append(f"<tr><td>#{c['connection_id']}</td><td>{rep}</td><td>{se}</td><td>{_bars(c, 'actions', 300)}</td>"
                 f"<td>{_bars(c, 'bytes', 300)}</td><td>{beh}</td><td>{wh}</td><td>{sk}</td></tr>")
    h.append("</table>")
    h.append("<h2>Position timeline</h2><p class='sub'>Each row is one connection across the binlog files (width ∝ "
             "bytes); full-height green = sent as stored, colored ticks = filtered (height ∝ share of the slice's "
             "events): <span class='k' style='background:#d9534f'></span>hole (withheld) <span class='k' "
             "style='background:#a8a8a8'></span>skipped at GTID connect (the replica has it) <span class='k' "
             "style='background:#f0ad4e'></span>dummy <span class='k' style='background:#5b8fd9'></span>begin</p>")
    h.append(_timeline_svg(summary, timeline))
    if summary["relay"]:
        h.append("<h2>Relay logs</h2><table><tr><th>replica</th><th>connections</th><th>relay events</th>"
                 "<th>ledger events sent</th><th>matched</th></tr>")
        for name, r in summary["relay"].items():
            h.append(f"<tr><td>{_e(name)}</td><td>{_e(r['connections'])}</td><td class='n'>{r['relay_events']}</td>"
                     f"<td class='n'>{r['ledger_sent_events']}</td><td class='n'>{r['matched']}</td></tr>")
        h.append("</table>")
    h.append(f"<h2>Findings ({summary['findings_total']})</h2>")
    if summary["findings"]:
        h.append("<table class='wide'><tr><th>check</th><th>severity</th><th>conn</th><th>where</th>"
                 "<th>message</th></tr>")
        for f in summary["findings"]:
            where = f"{f['file']}:{f['pos']}" if f["file"] else ("" if f["pos"] is None else f"pos {f['pos']}")
            h.append(f"<tr><td>{f['check']} {_e(CHECK_NAMES[f['check']])}</td><td class='sev-{f['severity']}'>"
                     f"{f['severity']}</td><td>{'' if f['connection_id'] is None else '#' + str(f['connection_id'])}"
                     f"</td><td><code>{_e(where)}</code></td><td>{_e(f['message'])}</td></tr>")
        h.append("</table>")
    else:
        h.append("<p>None.</p>")
    h.append("</body></html>\n")
    return "".join(h)
