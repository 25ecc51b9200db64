"""Documentation is not a failure report: a sample of the installed frameworks' configuration help texts and
docstrings, diagnosed as a description and as a plain line, gets no error finding.

The sample is the files whose texts gave batch-size error findings before round 10 (a batch requirement stated in
words: TRL's GRPO/RLOO configs, transformers' TrainingArguments, veRL's actor/critic configs and DataProto, accelerate's
dataclasses; 16 texts); the whole sweep, with the frameworks' info/warning strings too, is benchmarks/diagnose_false_alarms.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import diagnose_false_alarms as fa  # noqa: E402

SAMPLE = [("trl", "trainer/grpo_config.py"), ("trl", "trainer/rloo_config.py"), ("verl", "workers/config/actor.py"),
          ("verl", "protocol.py"), ("verl", "utils/tensordict_utils.py"), ("accelerate", "utils/dataclasses.py")]
# files whose texts still give other error findings (a docstring naming NaN losses, an nccl_timeout field read as
# NCCL's timeout; listed by the benchmark): only the batch-size finding is checked there
BATCH_ONLY = [("transformers", "training_args.py"), ("verl", "workers/config/critic.py")]


def _files(table: list[tuple[str, str]]) -> list[Path]:
    files = []
    for pkg, sub in table:
        d = fa.package_dir(pkg)
        if d is not None and (d / sub).exists():
            files.append(d / sub)
    if len(files) < len(table) // 2 + 1:
        pytest.skip(f"the frameworks' sources are not installed here ({len(files)} of {len(table)} files)")
    return files


def test_help_texts_of_the_frameworks_give_no_error_finding() -> None:
    texts = fa.help_texts(_files(SAMPLE))
    assert len(texts) > 200, len(texts)  # the sample is read (a collector that finds nothing would pass vacuously)
    bad = fa.sweep(texts, fa.SWEEPS["help"][2])
    assert not bad, "\n".join(f"{where}: {errs}: {s[:160]}" for where, s, errs in bad)


def test_batch_requirements_in_documentation_are_no_batch_error() -> None:
    texts = fa.help_texts(_files(BATCH_ONLY))
    assert len(texts) > 100, len(texts)
    bad = [(where, s, errs) for where, s, errs in fa.sweep(texts, fa.SWEEPS["help"][2])
           if any(c == "batch_size_misconfig" for c, _ in errs)]
    assert not bad, "\n".join(f"{where}: {errs}: {s[:160]}" for where, s, errs in bad)


def test_a_stated_requirement_in_a_failure_report_still_fires() -> None:
    """The other side of the sweep: the same words in a failed run are an error finding."""
    report = ("# my run crashed at start-up\nValueError: The global train batch size (3 x 4) must be evenly divisible "
              "by the number of generations per prompt (8).\n")
    assert ("batch_size_misconfig", ) == tuple(c for c, _ in fa.error_findings(report))[:1]
