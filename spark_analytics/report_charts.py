"""The report's charts as plotly figure specs (data + layout, the JSON plotly.js draws; the page inlines plotly.js
once): zoom, pan, hover and legend toggles come with it. Plain dicts, not plotly.graph_objects: those validate every
property in Python and took 15-60 s for a small report on a loaded machine.

Categories and their colours live here (ACTIONS/COLORS): a GTID connect's skipped groups are grey, never the red
of the holes that withhold events from a replica.
"""

from __future__ import annotations

from typing import Any

# (action as summary.json counts it, label in the report, colour)
CATEGORIES = (
    ("sent", "sent as stored", "#4c9a6a"),
    ("hole", "withheld (hole)", "#d9534f"),
    ("skipped", "skipped at GTID connect (replica has it)", "#a8a8a8"),
    ("dummy", "replaced by a dummy", "#f0ad4e"),
    ("begin", "replaced by BEGIN", "#5b8fd9"),
    ("renamed", "converted (database renamed)", "#2aa1b3"),
    ("fake", "generated (fake ROTATE/GTID_LIST)", "#9b7fc7"),
)
ACTIONS = tuple(a for a, _, _ in CATEGORIES)
LABELS = {a: label for a, label, _ in CATEGORIES} | {"error": "ERR packet sent"}
# the tables' labels (the colour key beside them; the charts' legends say it in full)
SHORT = {"sent": "sent", "hole": "withheld", "skipped": "skipped at connect", "dummy": "dummy", "begin": "BEGIN",
         "renamed": "renamed", "fake": "generated", "error": "ERR"}
COLORS = {a: color for a, _, color in CATEGORIES} | {"error": "#333333"}
SEVERITY_COLORS = {"error": "#8b0000", "warning": "#a66d00", "info": "#666666"}
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
_FONT = {"family": "system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", "size": 12}
_AXIS = {"gridcolor": "#ebebeb", "zeroline": False, "automargin": True}

Figure = dict[str, Any]  # {"data": [trace, ...], "layout": {...}} as plotly.js takes them


def conn_label(c: dict[str, Any]) -> str:
    return f"#{c['connection_id']} sid {c['server_id']} cap {c['capability']}{' skip' if c['skip_replication'] else ''}"


def _layout(height: int, bottom: int = 40, **kw: Any) -> dict[str, Any]:
    """White plot; a horizontal legend below the plot (`bottom` pixels reserved for the x axis and it)."""
    plot_h = max(height - 40 - bottom, 1)
    return {"height": height, "font": _FONT, "paper_bgcolor": "#ffffff", "plot_bgcolor": "#ffffff",
            "margin": {"l": 10, "r": 10, "t": 40, "b": bottom}, "hoverlabel": {"align": "left"},
            "legend": {"orientation": "h", "yanchor": "top", "y": -(bottom - 45) / plot_h, "x": 0}, **kw}


def actions_figure(summary: dict[str, Any]) -> Figure:
    """Per connection, events and bytes per action: two stacked horizontal bar charts side by side (shared rows)."""
    conns = summary["connections"]
    labels = [conn_label(c) for c in conns]
    data = []
    for a, label, color in CATEGORIES:
        for xaxis, key, unit in (("x", "actions", "events"), ("x2", "bytes", "bytes")):
            vals = [c[key].get(a, 0) for c in conns]
            if not any(vals):
                continue
            data.append({"type": "bar", "orientation": "h", "y": labels, "x": vals, "xaxis": xaxis, "yaxis": "y",
                         "name": label, "marker": {"color": color}, "legendgroup": a,
                         "showlegend": xaxis == "x" or not any(c["actions"].get(a) for c in conns),
                         "hovertemplate": f"%{{y}}<br>{label}: %{{x:,}} {unit}<extra></extra>"})
    title = {"xref": "paper", "yref": "paper", "y": 1.0, "yanchor": "bottom", "showarrow": False,
             "font": {"size": 14}}
    layout = _layout(150 + 30 * len(conns), bottom=110, barmode="stack",
                     xaxis={**_AXIS, "domain": [0, 0.48]}, xaxis2={**_AXIS, "domain": [0.52, 1], "anchor": "y"},
                     yaxis={**_AXIS, "autorange": "reversed"},
                     annotations=[{**title, "x": 0.24, "xanchor": "center", "text": "events per action"},
                                  {**title, "x": 0.76, "xanchor": "center", "text": "stored bytes per action"}])
    return {"data": data, "layout": layout}


def _where(bases: list[tuple[str, int, int]], g: float) -> str:
    """A global offset across the files as `file:pos`."""
    for name, base, end in bases:
        if g < base + end:
            return f"{name}:{max(0, int(g - base))}"
    name, base, end = bases[-1]
    return f"{name}:{end}"


def timeline_figure(summary: dict[str, Any], timeline: dict[int, list[dict[str, int]]]) -> Figure:
    """One row per connection across the binlog files (x = bytes): runs of slices coloured by what happened there.

    A slice's colour is its most frequent filtered action (any withheld/replaced event shows), else `sent`; hover
    gives every action's events in the run of slices. Findings with a binlog position are marked on their row.
    """
    files = summary["binlog"]["files"]
    bases: list[tuple[str, int, int]] = []
    acc = 0
    for f in files:
        bases.append((f["file"], acc, f["end"] or 4))
        acc += f["end"] or 4
    total = max(acc, 1)
    conns = summary["connections"]
    labels = [conn_label(c) for c in conns]
    segs: dict[str, dict[str, list[Any]]] = {a: {"y": [], "x": [], "base": [], "text": []} for a in ACTIONS}
    for c, label in zip(conns, labels, strict=True):
        slices = c.get("timeline") or timeline.get(c["connection_id"], [])
        n = len(slices) or 1
        run: list[Any] = []  # [kind, first slice, last slice, summed counts]
        for j, sl in enumerate([*slices, None]):
            kind = None
            if sl:
                filtered = {a: v for a, v in sl.items() if a != "sent"}
                kind = max(filtered, key=lambda k: filtered[k]) if filtered else "sent"
            if run and (kind != run[0] or sl is None):
                k, j0, j1, counts = run
                x0, x1 = total * j0 / n, total * (j1 + 1) / n
                s = segs.setdefault(k, {"y": [], "x": [], "base": [], "text": []})
                s["y"].append(label)
                s["base"].append(x0)
                s["x"].append(x1 - x0)
                s["text"].append(f"{_where(bases, x0)} → {_where(bases, x1)}<br>"
                                 + "<br>".join(f"{LABELS.get(a, a)}: {v:,} events" for a, v in sorted(counts.items())))
                run = []
            if kind is None:
                continue
            if not run:
                run = [kind, j, j, {}]
            run[2] = j
            for a, v in sl.items():
                run[3][a] = run[3].get(a, 0) + v
    data: list[dict[str, Any]] = []
    for a, s in segs.items():
        if s["y"]:
            data.append({"type": "bar", "orientation": "h", **s, "name": LABELS.get(a, a),
                         "marker": {"color": COLORS.get(a, "#999999"), "line": {"width": 0}}, "textposition": "none",
                         "hovertemplate": "%{y}<br>%{text}<extra></extra>"})
    by_file = {name: base for name, base, _ in bases}
    by_id = {c["connection_id"]: label for c, label in zip(conns, labels, strict=True)}
    for sev in ("error", "warning", "info"):
        pts = [f for f in summary["findings"] if f["severity"] == sev and f["file"] in by_file and f["pos"] is not None]
        if pts:
            data.append({
                "type": "scatter", "mode": "markers", "name": f"finding ({sev})",
                "x": [by_file[f["file"]] + f["pos"] for f in pts],
                "y": [by_id.get(f["connection_id"], "no connection") for f in pts],
                "marker": {"symbol": "x", "size": 11, "color": SEVERITY_COLORS[sev],
                           "line": {"width": 1, "color": "#ffffff"}},
                "text": [f"check {f['check']} {f['severity']}: {f['file']}:{f['pos']}<br>{f['message'][:160]}"
                         for f in pts], "hovertemplate": "%{y}<br>%{text}<extra></extra>"})
    shapes = [{"type": "line", "x0": base, "x1": base, "yref": "paper", "y0": 0, "y1": 1,
               "line": {"dash": "dot", "color": "#999999", "width": 1}} for _, base, _ in bases]
    notes = [{"x": base, "y": 1.0, "yref": "paper", "yanchor": "bottom", "xanchor": "left", "text": name,
              "showarrow": False, "font": {"size": 11, "color": "#444444"}} for name, base, _ in bases]
    rows = len(set(labels) | {by_id.get(f["connection_id"], "no connection") for f in summary["findings"]
                              if f["file"] in by_file})
    layout = _layout(170 + 30 * rows, bottom=130, barmode="overlay", bargap=0.25, shapes=shapes, annotations=notes,
                     xaxis={**_AXIS, "range": [0, total], "showgrid": False,
                            "title": {"text": "position across the binlog files (bytes; hover for file:pos)"}},
                     yaxis={**_AXIS, "autorange": "reversed", "categoryorder": "array",
                            "categoryarray": [*labels, "no connection"]})
    return {"data": data, "layout": layout}


def phases_figure(summary: dict[str, Any]) -> Figure | None:
    """Wall seconds per audit step (summary.json's step_seconds), in the order they ran; None without them."""
    steps = summary.get("step_seconds") or {}
    if not steps:
        return None
    data = [{"type": "bar", "orientation": "h", "y": list(steps), "x": list(steps.values()),
             "marker": {"color": "#5b8fd9"}, "text": [f"{v:g} s" for v in steps.values()], "textposition": "outside",
             "cliponaxis": False, "hovertemplate": "%{y}: %{x} s<extra></extra>"}]
    layout = _layout(100 + 22 * len(steps), bottom=50, showlegend=False,
                     xaxis={**_AXIS, "title": {"text": "seconds"}}, yaxis={**_AXIS, "autorange": "reversed"})
    return {"data": data, "layout": layout}
