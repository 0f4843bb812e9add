"""paddle.distributed's entry policies for `paddle.static.nn.sparse_embedding` (Paddle's
paddle.distributed.ProbabilityEntry, CountFilterEntry, ShowClickEntry): which ids of a
parameter-server table get a row. psjob checks their arguments as Paddle does and records
them (`_to_attr`, Paddle's attribute string); its tables admit every id, so they do not
change what a job trains (docs/user/paddle2.md)."""
from __future__ import annotations

__all__ = ["EntryAttr", "ProbabilityEntry", "CountFilterEntry", "ShowClickEntry"]


class EntryAttr:
    """The base of the entry policies."""

    def __init__(self) -> None:
        self._name: str | None = None

    def _to_attr(self) -> str:
        raise NotImplementedError("EntryAttr is the base class of the entry policies")


class ProbabilityEntry(EntryAttr):
    """Admit a new id with probability `probability` (a float in (0, 1))."""

    def __init__(self, probability: float) -> None:
        super().__init__()
        if not isinstance(probability, float) or not 0 < probability < 1:
            raise ValueError(f"ProbabilityEntry: probability must be a float in (0, 1), got {probability!r}")
        self._name, self._probability = "probability_entry", probability

    def _to_attr(self) -> str:
        return f"{self._name}:{self._probability}"


class CountFilterEntry(EntryAttr):
    """Admit an id once it has been seen `count_filter` times (an int ≥ 0)."""

    def __init__(self, count_filter: int) -> None:
        super().__init__()
        if not isinstance(count_filter, int) or isinstance(count_filter, bool) or count_filter < 0:
            raise ValueError(f"CountFilterEntry: count_filter must be an integer ≥ 0, got {count_filter!r}")
        self._name, self._count_filter = "count_filter_entry", count_filter

    def _to_attr(self) -> str:
        return f"{self._name}:{self._count_filter}"


class ShowClickEntry(EntryAttr):
    """Feed the table each id's shows and clicks, from the variables named show_name and
    click_name (what a CTR accessor weighs rows by)."""

    def __init__(self, show_name: str, click_name: str) -> None:
        super().__init__()
        if not isinstance(show_name, str) or not isinstance(click_name, str):
            raise ValueError(f"ShowClickEntry: show_name and click_name must be str (variable names), got "
                             f"{show_name!r} and {click_name!r}")
        self._name, self._show_name, self._click_name = "show_click_entry", show_name, click_name

    def _to_attr(self) -> str:
        return f"{self._name}:{self._show_name}:{self._click_name}"
