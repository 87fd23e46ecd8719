"""The finders behind the simulator's layering checks catch what they are for."""

from __future__ import annotations

from pathlib import Path

from tests.simulator.inheritance import MAX_OWN_INHERITANCE, own_inheritance_depths
from tests.test_layering import _own_private_uses


def test_the_inheritance_finder_catches_a_planted_chain(tmp_path: Path) -> None:
    (tmp_path / "state.py").write_text("class State:\n    pass\n", encoding="utf-8")
    (tmp_path / "parts.py").write_text(
        "from .state import State\n"
        "class Jobs(State):\n    pass\n"
        "class Clock(Jobs):\n    pass\n"
        "class Cluster(dict, parts.Clock):\n    pass\n",
        encoding="utf-8",
    )
    depths = own_inheritance_depths(sorted(tmp_path.glob("*.py")))
    assert depths == {"State": 0, "Jobs": 1, "Clock": 2, "Cluster": 3}
    too_deep = {name for name, d in depths.items() if d > MAX_OWN_INHERITANCE}
    assert too_deep == {"Clock", "Cluster"}


def test_the_inheritance_finder_lets_one_level_pass(tmp_path: Path) -> None:
    # The plugins: checkpoint/none is blcr with "not supported" as every answer.
    (tmp_path / "plugins.py").write_text(
        "class Blcr:\n    pass\nclass Ompi:\n    pass\nclass NonePlugin(Blcr):\n    pass\n",
        encoding="utf-8",
    )
    assert own_inheritance_depths([tmp_path / "plugins.py"]) == {
        "Blcr": 0,
        "Ompi": 0,
        "NonePlugin": 1,
    }


def test_the_private_name_finder_catches_a_hook_reaching_into_a_part(tmp_path: Path) -> None:
    sample = tmp_path / "hooks.py"
    sample.write_text(
        "def advance(cluster, seconds):\n"
        "    cluster.clock.advance(seconds)\n"
        "    cluster.timeline._handlers.clear()\n",
        encoding="utf-8",
    )
    assert _own_private_uses([sample]) == ["hooks.py:3 ._handlers"]
