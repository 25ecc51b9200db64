"""Where a role's model comes from: a catalog name, a local model folder or config.json, or a
Hugging Face hub id. The I/O half of model resolution.

Every tool that takes a Plan passes it through ``resolve_plan_models`` first (``tools.guarded``):
each role whose ``model`` (or ``path``) is a local folder, a config.json or a hub id the catalog
does not know gets its ``spec`` filled from that config, so the pure core (``advisor``) reads
dimensions from the Plan and never touches a file or the network. Catalog names stay as they are
(the catalog is the offline cache of well-known models). A role without ``path`` gets one for
rendering: the folder, the hub id, or the catalog model's hub id.

Hub configs are fetched with ``huggingface_hub`` (it honours ``HF_ENDPOINT``, ``HF_TOKEN`` and
``HF_HUB_OFFLINE``) into ``<data dir>/hf-configs`` and read from there on every later call
without a request.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from advisor.catalog import find_model, weights_path_for
from advisor.errors import AdvisorError
from advisor.plan import ModelSpec, Plan, RoleModel
from rl_advisor.hfconfig import has_config, load_model_spec, read_hf_config, spec_from_config

ROLES = ("policy", "reference", "reward", "critic")
# org/name as the hub spells repo ids (huggingface_hub.utils.validate_repo_id).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_OFFLINE_VALUES = {"1", "true", "yes", "on"}


def is_hub_id(ref: str) -> bool:
    """``org/name`` (one slash, hub characters, no ``..``, not ending in .json)."""
    return bool(_HUB_ID.match(ref or "")) and ".." not in ref and not ref.endswith(".json")


def _looks_local(ref: str) -> bool:
    return ref.startswith(("/", "./", "../", "~")) or ref.endswith(".json") or os.sep + os.sep in ref


def hub_cache_dir() -> Path:
    from backends.data_folder import data_dir

    return data_dir() / "hf-configs"


def hub_config(repo_id: str, field: str, revision: str | None = None) -> Path:
    """The local path of ``repo_id``'s config.json: the cached copy when there is one (no request),
    else downloaded once with huggingface_hub. Offline or unreachable, the error says what to pass."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub import errors as hf_errors

    cache = hub_cache_dir()
    endpoint = os.environ.get("HF_ENDPOINT") or None  # read per call: huggingface_hub reads it at import
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision, cache_dir=cache,
                                    endpoint=endpoint, local_files_only=True))
    except (hf_errors.LocalEntryNotFoundError, FileNotFoundError, hf_errors.OfflineModeIsEnabled):
        pass
    except hf_errors.HFValidationError as exc:
        raise AdvisorError(f"not a valid hub id: {exc}", field=field, value=repo_id,
                           allowed="org/name, e.g. Qwen/Qwen2.5-7B-Instruct") from None
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _OFFLINE_VALUES:
        raise _offline(repo_id, field, "HF_HUB_OFFLINE is set and the config is not cached")
    _probe(repo_id, field, revision, endpoint)
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision, cache_dir=cache,
                                    endpoint=endpoint, etag_timeout=10))
    except hf_errors.GatedRepoError:
        raise AdvisorError(f"{repo_id} is gated on the hub: accept its licence on its model page and "
                           "set HF_TOKEN (or run `hf auth login`)", field=field, value=repo_id,
                           allowed="a hub id you can read, a local model folder or config.json path, "
                                   "or a catalog name") from None
    except hf_errors.RepositoryNotFoundError:
        raise AdvisorError(f"no model {repo_id} on the hub (or it is private: set HF_TOKEN)", field=field,
                           value=repo_id, allowed="an existing hub id (org/name), a local model folder or "
                                                  "config.json path, or a catalog name "
                                                  "(rl-advisor list-catalog --kind models)") from None
    except (hf_errors.RevisionNotFoundError, hf_errors.EntryNotFoundError):
        raise AdvisorError(f"{repo_id} has no config.json on the hub (not a transformers model?)",
                           field=field, value=repo_id,
                           allowed="a transformers model repo, or the role's spec with exact dimensions") from None
    except (hf_errors.HfHubHTTPError, hf_errors.OfflineModeIsEnabled, OSError) as exc:
        raise _offline(repo_id, field, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    except Exception as exc:  # httpx transport errors (DNS, refused, timeout) and the like
        raise _offline(repo_id, field, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None


def _probe(repo_id: str, field: str, revision: str | None, endpoint: str | None) -> None:
    """One HEAD request without retries, so an unreachable hub is reported at once (huggingface_hub
    retries connection errors with backoff for about 20 s). Any HTTP answer counts as reachable."""
    from huggingface_hub import hf_hub_url
    from huggingface_hub.utils import get_session

    url = hf_hub_url(repo_id, "config.json", revision=revision, endpoint=endpoint)
    try:
        get_session().head(url, timeout=10, follow_redirects=False)
    except Exception as exc:  # connection refused, DNS failure, timeout
        raise _offline(repo_id, field, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else url}") from None


def _offline(repo_id: str, field: str, why: str) -> AdvisorError:
    return AdvisorError(
        f"cannot fetch {repo_id}/config.json from the Hugging Face hub ({why})", field=field, value=repo_id,
        allowed=(f"a local model folder or config.json path as {field} (on a machine online: "
                 f"`hf download {repo_id} config.json --local-dir DIR`, then pass DIR), a catalog name "
                 f"(rl-advisor list-catalog --kind models), or exact dimensions as the role's spec; "
                 f"or set HF_ENDPOINT to a reachable mirror"))


def model_from_ref(ref: str, field: str) -> tuple[ModelSpec, str] | None:
    """(spec, weights path) for a local folder/config.json or a hub id; None for anything else
    (a catalog name, or an unknown name the core will report)."""
    p = Path(ref).expanduser()
    if has_config(p):
        folder = p.parent if p.suffix == ".json" else p
        return load_model_spec(p, field=field), str(folder)
    if _looks_local(ref):
        if find_model(ref) is not None:  # /ckpt/Qwen2.5-7B-Instruct without files: its catalog name
            return None
        read_hf_config(p, field)  # raises "no config.json there" naming the field
    if is_hub_id(ref) and find_model(ref) is None:
        cfg_path = hub_config(ref, field)
        return spec_from_config(read_hf_config(cfg_path, field), ref.split("/", 1)[1], field), ref
    return None


def resolve_role(rm: RoleModel, field: str) -> RoleModel:
    """One role with ``spec`` filled from a local or hub config when the catalog does not know it,
    and ``path`` filled for rendering when the user left it out."""
    update: dict = {}
    if rm.spec is None:
        for attr in ("model", "path"):
            ref = getattr(rm, attr)
            if not ref:
                continue
            found = model_from_ref(ref, f"{field}.{attr}")
            if found is not None:
                update["spec"] = found[0]
                if rm.path is None:
                    update["path"] = found[1]
                break
            if find_model(ref) is not None:
                break
    if rm.path is None and "path" not in update:
        if is_hub_id(rm.model):
            update["path"] = rm.model
        elif (derived := weights_path_for(rm.model)) is not None:
            update["path"] = derived
    return rm.model_copy(update=update) if update else rm


def resolve_plan_models(plan: Plan) -> Plan:
    """The Plan with every role's model resolved (see module docstring); the same object when
    nothing changes."""
    update = {}
    for role in ROLES:
        rm = getattr(plan, role, None)
        if isinstance(rm, RoleModel):
            new = resolve_role(rm, role)
            if new is not rm:
                update[role] = new
    return plan.model_copy(update=update) if update else plan
