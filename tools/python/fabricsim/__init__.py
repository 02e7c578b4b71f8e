"""fabricsim from Python: the CLI's verbs on plain dicts.

Every function takes what the matching ``fabricsim`` verb takes as input, either as a dict (the
JSON document) or as a file name (read as the CLI reads it), and returns what the verb prints with
``--json``, as plain dicts and lists. Bad input raises :class:`InputError` (a ``ValueError``) with
the message the CLI prints after ``fabricsim:``. See docs/python.md.
"""

import json
import os

from . import _fabricsim
from ._fabricsim import InputError, __version__, commit

__all__ = ["InputError", "run", "plan", "scale", "sweep", "collective", "to_dataframe",
           "__version__", "commit"]


def _document(doc):
    """(file, text) for the C++ side: a path, a dict as JSON text, or neither (the default)."""
    if doc is None:
        return "", ""
    if isinstance(doc, (str, os.PathLike)):
        return os.fspath(doc), ""
    if not isinstance(doc, dict):
        raise TypeError(f"expected a dict or a file name, got {type(doc).__name__}")
    # NaN and infinity are not JSON: refused here, as the CLI's reader refuses them.
    return "", json.dumps(doc, allow_nan=False)


def run(scenario=None):
    """One training step of a scenario: ``fabricsim run [FILE] --json``. Without a scenario, the
    embedded default (Llama 3 8B on 8 DGX H100 GPUs)."""
    return json.loads(_fabricsim.run(*_document(scenario)))


def plan(scenario=None, *, fix=(), top=5, threads=1, max_tp=0, max_pp=0, max_micro_batch=0):
    """Search the parallelism plans of a scenario: ``fabricsim plan [FILE] --json``. ``fix`` holds
    ``--fix`` items ("tp=8"); ``top`` plans are re-simulated at flow fidelity; 0 limits take the
    CLI's defaults. A search that finds no plan returns an empty ``plans`` list (where the CLI
    exits 2); ``rejected`` counts why."""
    return json.loads(_fabricsim.plan(*_document(scenario), list(fix), top, threads, max_tp,
                                      max_pp, max_micro_batch))


def scale(scenario=None):
    """Scaling study of a scenario and its "scale" section: ``fabricsim scale [FILE] --json``."""
    return json.loads(_fabricsim.scale(*_document(scenario)))


def sweep(spec, *, threads=1, output=None, resume=False, shard=None):
    """Evaluate every point of a sweep spec (a dict or a spec file): the rows, in point order,
    that ``fabricsim sweep SPEC`` prints. With ``output`` the rows are also streamed into that
    folder as ``fabricsim sweep SPEC -o DIR`` writes it (``resume`` continues it); ``shard`` is
    "i/N" as with ``--shard``. ``threads`` 0: one per core."""
    file, text = _document(spec)
    if not file and not text:
        raise TypeError("sweep needs a spec")
    out = os.fspath(output) if output is not None else ""
    return json.loads(_fabricsim.sweep(file, text, threads, out, resume, shard or ""))


def _flag(name, value):
    flag = "--" + name.replace("_", "-")
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    return [flag, str(value)]


def collective(**options):
    """What nccl-tests would measure: ``fabricsim collective --json`` with each keyword as its
    flag (``op="all_gather"``, ``gpus=16``, ``max_bytes="1G"``, ``collnet=True``; docs/cli.md).
    The collective verb's logic lives in its CLI command, so this runs that command in-process."""
    args = ["collective", "--json"]
    for name, value in options.items():
        args += _flag(name, value)
    code, out, err = _fabricsim.cli(args)
    if code != 0:
        message = err.strip()
        if message.startswith("fabricsim: "):
            message = message[len("fabricsim: "):]
        raise (InputError if code == 2 else RuntimeError)(message)
    return json.loads(out)


def to_dataframe(result):
    """A pandas DataFrame of a result's rows: sweep rows (a list), ``scale`` or ``collective``
    rows, or ``plan``'s ranked plans (its flow-refined ``plans``, else its
    ``analytical_ranking``); nested fields become dotted columns (``metrics.mfu``).
    Needs pandas."""
    import pandas  # imported here: the rest of the module works without it

    rows = result
    if isinstance(result, dict):
        if "rows" in result:
            rows = result["rows"]
        elif "analytical_ranking" in result:
            # The plans re-simulated at flow fidelity when there are any, else the whole ranking.
            rows = result.get("plans") or result["analytical_ranking"]
        else:
            raise ValueError("expected a sweep, scale, collective or plan result")
    return pandas.json_normalize(rows)
