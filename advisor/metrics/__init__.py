"""Metric readers and the normalised metric vocabulary (pure: text in, points out).

* ``MetricPoint`` / ``MetricSeries``: what readers produce (normalised names + original keys).
* ``detect_format(head)``: which log format a file is (``FORMATS``).
* ``make_reader(fmt)``: an incremental reader with ``feed(chunk) -> list[MetricPoint]`` and
  ``finish() -> list[MetricPoint]`` (call it once at end of input).
* ``parse_text(text)``: every point of a whole text.
* ``SeriesStore``: bounded-memory accumulation of points into per-metric series.
* ``vocabulary()`` / ``normalize_key(raw_key)``: the vocabulary table.
"""

from advisor.metrics.model import MetricPoint, MetricSeries, make_point
from advisor.metrics.parsers import (FORMATS, LogReader, TrainerStateReader, detect_format, make_reader,
                                     parse_number, parse_text)
from advisor.metrics.store import SeriesStore
from advisor.metrics.vocabulary import normalize_key, vocabulary

__all__ = ["FORMATS", "LogReader", "MetricPoint", "MetricSeries", "SeriesStore", "TrainerStateReader",
           "detect_format", "make_point", "make_reader", "normalize_key", "parse_number", "parse_text",
           "vocabulary"]
