"""An agent run's HTML page (`pytps agents --html FILE`): TTFT against each turn's input tokens,
coloured by the share served from cache, and each agent's timeline (its turns, model time, and
its tool waits), with the summary's figures. Draws only; pytps.measure.agents computes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytps.measure.agents import AgentRow
from pytps.report.agent_lines import agent_lines
from pytps.report.html_page import Page, e, write_page

__all__ = ["write_agents_page"]


def _ttft_vs_context(agents: Sequence[AgentRow]) -> Any:
    from bokeh.models import ColumnDataSource, HoverTool, LinearColorMapper
    from bokeh.models.annotations import ColorBar
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure

    rows = [t for a in agents for t in a.turns if t.ok and t.ttft_s is not None and t.input_tokens]
    src = ColumnDataSource(
        {
            "x": [t.input_tokens for t in rows],
            "y": [(t.ttft_s or 0.0) * 1e3 for t in rows],
            "share": [t.cached_share if t.cached_share is not None else 0.0 for t in rows],
            "agent": [t.agent for t in rows],
            "turn": [t.turn for t in rows],
        }
    )
    fig = figure(title="TTFT against the turn's input tokens (colour: cached share)", height=340,
                 sizing_mode="stretch_width", tools="pan,box_zoom,wheel_zoom,reset,save")  # fmt: skip
    fig.xaxis.axis_label = "input tokens"
    fig.yaxis.axis_label = "TTFT (ms)"
    mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0)
    fig.scatter("x", "y", source=src, size=6, alpha=0.8, color={"field": "share", "transform": mapper})
    fig.add_layout(ColorBar(color_mapper=mapper, title="cached share"), "right")
    fig.add_tools(HoverTool(tooltips=[("agent", "@agent"), ("turn", "@turn"), ("tokens", "@x"), ("TTFT ms", "@y")]))
    fig.toolbar.logo = None
    return fig


def _timelines(agents: Sequence[AgentRow]) -> Any:
    from bokeh.plotting import figure

    turns = [t for a in agents for t in a.turns]
    t0 = min((t.t_send_ns for t in turns), default=0)
    title = "Agents' timelines: model time (blue) and tool waits (orange)"
    fig = figure(title=title, height=max(200, 22 * len(agents)),
                 sizing_mode="stretch_width", tools="pan,box_zoom,wheel_zoom,reset,save")  # fmt: skip
    fig.xaxis.axis_label = "time since the first send (s)"
    fig.yaxis.axis_label = "agent"
    for a in agents:
        for t in a.turns:
            start = (t.t_send_ns - t0) / 1e9
            end = ((t.t_end_ns or t.t_send_ns) - t0) / 1e9
            fig.hbar(y=a.agent, left=start, right=end, height=0.7, color="#1f77b4")
            if t.tool_s > 0 and t is not a.turns[-1]:
                fig.hbar(y=a.agent, left=end, right=end + t.tool_s, height=0.7, color="#ff7f0e")
    fig.toolbar.logo = None
    return fig


def write_agents_page(agents: Sequence[AgentRow], summary: Mapping[str, Any], mode: str, out: str | Path) -> Path:
    page = Page("pytps agents")
    page.add("<h1>pytps agents</h1>")
    page.add("<pre>" + e("\n".join(agent_lines(summary, mode))) + "</pre>")
    page.add(page.plot(_ttft_vs_context(agents)))
    page.add(page.plot(_timelines(agents)))
    return write_page(page, out)
