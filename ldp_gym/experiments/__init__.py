"""The catalogue of named experiments that reproduce the papers (``ldp-gym reproduce NAME``).

Each experiment runs what the paper ran (full) or a minutes-long version
(``quick``), and reports what the code measured: a Markdown table, the raw
results and a figure. Nothing is tuned towards the published figures. One
module per setting.

Example:
    >>> {'azize2022-fig2', 'azize2022-fig3', 'mab-local-vs-global'} <= set(EXPERIMENTS)
    True
"""

from . import bco, best_arm, combinatorial, glm, mab, nonparametric
from .common import Experiment, Report

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e for module in (mab, glm, bco, nonparametric, combinatorial, best_arm)
    for e in module.EXPERIMENTS}

__all__ = ["EXPERIMENTS", "Experiment", "Report"]
