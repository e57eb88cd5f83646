"""The calibration plot: expected against actual win rate per bin, with 95% intervals.

Needs matplotlib (the ``analysis`` extra: ``pip install -e '.[analysis]'``); it is imported
only when a plot is drawn, with the non-interactive Agg backend, so it works without a display.
"""

from __future__ import annotations

import math

from rating_plugin.analysis.calibration import Report

__all__ = ["calibration_plot"]


def calibration_plot(report: Report, path: str) -> None:
    """Draw ``report``'s bins as a PNG at ``path``: each bin's expected win rate of the
    favourite (current divisor) on x, the actual rate on y with its Wilson 95% interval, the
    fitted divisor's expectation beside it, and the diagonal where a calibrated curve lies."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bins = report.bins
    expected = [b.expected for b in bins]
    fitted = [b.fitted for b in bins]
    actual = [b.actual for b in bins]
    below = [b.actual - b.actual_low for b in bins]
    above = [b.actual_high - b.actual for b in bins]
    unit = "scale" if report.ladder == "fibs" else "divisor"
    figure, axes = plt.subplots(figsize=(6.4, 6.0), dpi=100)
    try:
        low = min([0.5, *expected, *actual]) - 0.02
        high = max([0.5, *expected, *actual, *(b.actual_high for b in bins)]) + 0.02
        axes.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1,
                  label="perfect calibration")
        axes.errorbar(expected, actual, yerr=[below, above], fmt="o", capsize=3,
                      label=f"actual vs current {unit} {report.current.divisor:.0f}")
        if math.isfinite(report.fit.divisor) and report.fit.divisor > 0:
            axes.plot(fitted, actual, "x", color="tab:red",
                      label=f"actual vs fitted {unit} {report.fit.divisor:.0f}")
        for b, x, y in zip(bins, expected, actual, strict=True):
            axes.annotate(f"{b.low:.0f}+", (x, y), textcoords="offset points", xytext=(6, -10),
                          fontsize=7, color="dimgrey")
        axes.set_xlim(low, high)
        axes.set_ylim(low, high)
        axes.set_xlabel("expected win rate of the favourite")
        axes.set_ylabel("actual win rate of the favourite (95% interval)")
        axes.set_title(f"{report.ladder} calibration: {report.games} games")
        axes.legend(loc="upper left", fontsize=8)
        axes.grid(True, linewidth=0.3)
        figure.tight_layout()
        figure.savefig(path, format="png")
    finally:
        plt.close(figure)
