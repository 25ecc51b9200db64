"""Read an existing framework config back into a Plan, reporting what was not understood.

``import_config(text, framework=None) -> ImportResult``: a veRL launch (Hydra overrides in a shell
script or command line: ``main_ppo`` or the ``sft_trainer``), an OpenRLHF command line (0.11.2
dotted flags of train_ppo_ray / train_dpo / train_rm / train_sft, also under ``ray job submit --``,
``deepspeed --module`` or ``bash -c 'exec ...'``; 0.9.5 flat flags are recognised and reported as
legacy) or a TRL config YAML, optionally followed (``---``) by the accelerate config it is launched
with, which carries the backend, offload and process count. ``framework=None`` detects it.

What render_config writes, import_config reads back to the same Plan fields
(tests/test_import_roundtrip.py); anything else is listed in ``not_understood``.
"""

from __future__ import annotations

from advisor.errors import AdvisorError
from advisor.importers.models import ImportResult
from advisor.plan import Framework

SUPPORTED = (Framework.VERL, Framework.OPENRLHF, Framework.TRL)


def detect_framework(text: str) -> Framework:
    """Which framework wrote this config: veRL overrides, an OpenRLHF command, or a TRL YAML."""
    from advisor.importers import openrlhf, trl, verl

    if verl.looks_like(text):
        return Framework.VERL
    if openrlhf.looks_like(text):
        return Framework.OPENRLHF
    if trl.looks_like(text):
        return Framework.TRL
    raise AdvisorError("could not tell which framework this config is for", field="framework",
                       value=None, allowed="pass framework=verl|openrlhf|trl, or give a veRL main_ppo "
                       "command, an openrlhf.cli command or a TRL config YAML")


def import_config(text: str, framework: Framework | None = None) -> ImportResult:
    """Import a veRL / OpenRLHF / TRL config into a Plan. Every setting that does not map onto the
    Plan is listed in ``not_understood`` (never dropped silently); assumptions are in ``notes``.
    For TRL, append the accelerate config after a ``---`` line to import the backend and GPU count."""
    from advisor.importers.openrlhf import import_openrlhf
    from advisor.importers.trl import import_trl
    from advisor.importers.verl import import_verl

    from advisor.yamlio import check_text_size

    if not isinstance(text, str) or not text.strip():
        raise AdvisorError("empty config", field="text", allowed="the text of a launch script or config file")
    check_text_size(text, field="text")
    fw = Framework(framework) if framework is not None else detect_framework(text)
    if fw == Framework.VERL:
        return import_verl(text)
    if fw == Framework.OPENRLHF:
        return import_openrlhf(text)
    if fw == Framework.TRL:
        return import_trl(text)
    raise AdvisorError("no importer for this framework", field="framework", value=fw.value,
                       allowed=", ".join(f.value for f in SUPPORTED))


__all__ = ["import_config", "detect_framework", "ImportResult"]
