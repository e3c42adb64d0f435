"""Benchmarks envmill imports as environments and scenarios, and evaluates policies on.

A benchmark's scenarios carry their ``source`` and ``split`` (``eval``): exports leave them out
unless asked, so no one trains on a test set by accident (DESIGN §3.3). The pinned package is
what the importer reads; another version's files may differ in shape, so it is refused.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

BFCL_SOURCE = "bfcl"  # the `source` of every scenario and environment imported from BFCL
BFCL_BENCHMARK = "bfcl-mt"  # `envmill eval --benchmark`
BFCL_EVAL_VERSION = "2026.3.23"  # the bfcl-eval release whose files the importer reads
SYNTHETIC_SOURCE = "envmill"  # what envmill's own backends make
EVAL_SPLIT, TRAIN_SPLIT = "eval", "train"

BfclCategory = Literal["base", "miss_param", "miss_func", "long_context"]
BFCL_CATEGORIES: tuple[BfclCategory, ...] = get_args(BfclCategory)


class BfclSettings(BaseModel):
    """What ``envmill import bfcl`` takes (``[bfcl]`` in envmill.toml, ``ENVMILL_BFCL__*``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    category: BfclCategory = "base"
    limit: int = Field(default=0, ge=0, description="the first N tasks of the category; 0: all")
