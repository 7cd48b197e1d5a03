"""Built-in conformal methods, registered through the same hooks as plugins."""

from __future__ import annotations

from typing import Any

from judgecp.base.hookspecs import hookimpl
from judgecp.stats.methods.boosted import BoostedCQR, BoostedLCP
from judgecp.stats.methods.histogram import CHR
from judgecp.stats.methods.lvd import LVD
from judgecp.stats.methods.mondrian import Mondrian
from judgecp.stats.methods.ordinal import OrdinalAPS, OrdinalCDFSet
from judgecp.stats.methods.quantile_regression import CQR, AsymmetricCQR
from judgecp.stats.methods.r2ccp import R2CCP
from judgecp.stats.methods.sets import APS, LAC, RAPS, Margin
from judgecp.stats.methods.split import NaiveSplit

INTERVAL_METHODS = (NaiveSplit, CQR, AsymmetricCQR, CHR, LVD, BoostedCQR, BoostedLCP, R2CCP)
SET_METHODS = (OrdinalAPS, LAC, APS, RAPS, OrdinalCDFSet, Margin)

__all__ = [
    "APS",
    "CHR",
    "CQR",
    "LAC",
    "LVD",
    "R2CCP",
    "RAPS",
    "AsymmetricCQR",
    "BoostedCQR",
    "BoostedLCP",
    "Margin",
    "Mondrian",
    "NaiveSplit",
    "OrdinalAPS",
    "OrdinalCDFSet",
]


@hookimpl
def register_interval_methods() -> list[type[Any]]:
    return list(INTERVAL_METHODS)


@hookimpl
def register_set_methods() -> list[type[Any]]:
    return list(SET_METHODS)
