"""The one ``Binding`` class still offers every call of ``SlurmAPI``, with its parameters.
(The binding's import rules, no import loop and no file over 900 lines: tests/test_layering.py,
with the whole package.)

No cluster needed: the sources and the classes are read, nothing is loaded.
"""

from __future__ import annotations

import inspect

from sckpt.backend.libslurm import Binding
from sckpt.backend.slurm_api import SlurmAPI


def test_binding_has_every_call_of_the_slurm_api_protocol_with_its_parameters() -> None:
    members = [
        name
        for name, value in vars(SlurmAPI).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    ]
    assert "load_jobs" in members and "caller_uid" in members
    for name in members:
        wanted, offered = getattr(SlurmAPI, name), getattr(Binding, name, None)
        assert offered is not None, f"Binding has no {name}"
        assert isinstance(offered, property) == isinstance(wanted, property), name
        if callable(wanted):
            assert list(inspect.signature(offered).parameters) == list(
                inspect.signature(wanted).parameters
            ), name
