"""Per-category bar charts for ``folioflow eval ... --plot`` (matplotlib, Agg backend: no display).

matplotlib is the optional extra ``plot`` (``pip install 'folioflow[plot]'``); without it
:func:`bar_chart` raises :class:`~folioflow.ocr.errors.ConfigurationError` saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from folioflow.ocr.errors import ConfigurationError

__all__ = ["bar_chart"]


def bar_chart(series: Mapping[str, Mapping[str, float]], path: str | Path, title: str, ylabel: str,
              ylim: tuple[float, float] | None = (0.0, 1.0), percent: bool = True) -> Path:
    """Grouped bars: one group per category (the inner keys, in first-seen order), one bar per series
    (outer keys) that has a value for it, value labels on the bars. Writes a PNG to ``path`` and
    returns it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ConfigurationError("--plot needs matplotlib: pip install 'folioflow[plot]'") from exc
    categories = list(dict.fromkeys(c for values in series.values() for c in values))
    names = list(series)
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.3 * len(categories) * len(names) + 2.5)), 4.5))
    for i, name in enumerate(names):
        # a category a series does not have gets no bar (not a zero bar)
        points = [(j + (i - (len(names) - 1) / 2) * width, float(series[name][c]))
                  for j, c in enumerate(categories) if series[name].get(c) is not None]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        bars = ax.bar(xs, ys, width=width, label=name)
        ax.bar_label(bars, labels=[f"{y:.0%}" if percent else f"{y:g}" for y in ys], fontsize=7, padding=2)
    ax.set_xticks(range(len(categories)), categories, rotation=20 if len(categories) > 5 else 0, ha="right" if len(categories) > 5 else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim:
        ax.set_ylim(ylim[0], ylim[1] * 1.1)  # head room for the value labels
        ax.set_yticks([ylim[0] + (ylim[1] - ylim[0]) * i / 5 for i in range(6)])
        if percent:
            ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    if len(names) > 1:
        ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
