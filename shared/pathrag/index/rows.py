"""Mappings of rows that a store fetches on first use, and a commit's layer over them.

:class:`LazyRows` is a dict of rows filled on demand by a fetch function (a store's rows, read by id);
:class:`LayeredRows` adds the layer an in-memory commit writes into, published at once or dropped (see
:class:`~pathrag.index.tables.MemoryRecordTables`).

>>> rows = LazyRows(lambda ids: {i: i.upper() for i in ids or ["a"]})
>>> rows["b"], "a" in rows
('B', True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import TypeVar

from typing_extensions import override

__all__ = ["ABSENT", "Absent", "LayeredRows", "LazyRows"]

V = TypeVar("V")


class Absent:
    """The row of a key a commit deleted (in its layer, see :class:`LayeredRows`)."""


ABSENT = Absent()


class LazyRows(MutableMapping[str, V]):
    """Rows of a store table, fetched by key on first use and then kept with this process's changes;
    iterating fetches the rest. Without ``fetch`` it is a plain dict (an in-memory index)."""

    def __init__(
        self,
        fetch: Callable[[list[str]], dict[str, V]] | None = None,
        fetch_all: Callable[[], dict[str, V]] | None = None,
    ) -> None:
        self._rows: dict[str, V] = {}
        self._absent: set[str] = set()  # known not to exist (or deleted here): never fetched again
        self._fetch, self._fetch_all = fetch, fetch_all
        self._complete = fetch is None

    def prefetch(self, keys: Iterable[str]) -> None:
        """Fetch the rows of ``keys`` not known yet, in one query."""
        if self._complete:
            return
        wanted = [k for k in dict.fromkeys(keys) if k not in self._rows and k not in self._absent]
        if wanted:
            assert self._fetch is not None
            found = self._fetch(wanted)
            self._rows.update(found)
            self._absent.update(k for k in wanted if k not in found)

    def peek(self, key: str) -> tuple[bool, V | None]:
        """Without a query: whether the row of ``key`` is known here, and then the row (``None``: it does
        not exist, or was deleted here)."""
        if key in self._rows:
            return True, self._rows[key]
        return self._complete or key in self._absent, None

    def __getitem__(self, key: str) -> V:
        row = self._rows.get(key, ABSENT)  # fetched already: no query (a rebuild looks 10⁵ rows up)
        if isinstance(row, Absent):
            self.prefetch([key])
            return self._rows[key]
        return row

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        if key in self._rows:
            return True
        self.prefetch([key])
        return key in self._rows

    def __setitem__(self, key: str, value: V) -> None:
        self._rows[key] = value
        self._absent.discard(key)

    def __delitem__(self, key: str) -> None:
        self.prefetch([key])
        del self._rows[key]
        self._absent.add(key)

    def __iter__(self) -> Iterator[str]:
        if not self._complete:
            assert self._fetch_all is not None
            for key, row in self._fetch_all().items():
                if key not in self._rows and key not in self._absent:
                    self._rows[key] = row
            self._complete = True
        return iter(list(self._rows))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class LayeredRows(LazyRows[V]):
    """The rows of an index without a directory: the committed rows (:attr:`committed`: what readers
    see) and, while a commit is open (:meth:`open`), that commit's changes over them: reads through this
    mapping see both, writes change only the layer, :meth:`publish` makes it committed (in place) and
    :meth:`drop` forgets it. Outside a commit, writes go to the committed rows."""

    def __init__(self) -> None:
        super().__init__()
        self.committed: dict[str, V] = self._rows
        self._layer: dict[str, V | Absent] | None = None
        self._deleted: set[str] = set()  # keys deleted by the open commit (set again: they move to the end)

    def open(self) -> None:
        """A commit opens: writes go to its layer from now on."""
        self._layer, self._deleted = {}, set()

    def layer(self) -> dict[str, V | Absent]:
        """The open commit's changes: key -> new row (:data:`ABSENT`: deleted); empty with none open."""
        return dict(self._layer or {})

    def publish(self) -> None:
        """The commit lands: its changes become committed rows (a deleted row set again moves to the end)."""
        layer, deleted = self._layer or {}, self._deleted
        self._layer, self._deleted = None, set()
        for key, row in layer.items():
            if key in deleted:
                self._rows.pop(key, None)
            if isinstance(row, Absent):
                self._rows.pop(key, None)
            else:
                self._rows[key] = row

    def is_open(self) -> bool:
        """Whether a commit's layer is open."""
        return self._layer is not None

    def in_layer(self, key: str) -> bool:
        """Whether the open commit changed (or deleted) the row of ``key``."""
        return self._layer is not None and key in self._layer

    def drop(self) -> None:
        """The commit failed: its changes are forgotten."""
        self._layer, self._deleted = None, set()

    @override
    def prefetch(self, keys: Iterable[str]) -> None:
        pass

    @override
    def __getitem__(self, key: str) -> V:
        if self._layer is not None and key in self._layer:
            row = self._layer[key]
            if isinstance(row, Absent):
                raise KeyError(key)
            return row
        return self._rows[key]

    @override
    def __contains__(self, key: object) -> bool:
        if self._layer is not None and key in self._layer:
            return not isinstance(self._layer[key], Absent)
        return key in self._rows

    @override
    def __setitem__(self, key: str, value: V) -> None:
        if self._layer is None:
            self._rows[key] = value
        else:
            self._layer[key] = value

    @override
    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        if self._layer is None:
            del self._rows[key]
        else:
            self._layer[key] = ABSENT
            self._deleted.add(key)

    @override
    def __iter__(self) -> Iterator[str]:
        layer = self._layer
        if layer is None:
            return iter(list(self._rows))
        # the committed order, a row deleted and set again (or new) at the end, as publish() leaves them
        moved = self._deleted
        kept = [k for k in self._rows if k not in moved and not isinstance(layer.get(k), Absent)]
        fresh = [k for k, row in layer.items() if not isinstance(row, Absent) and (k in moved or k not in self._rows)]
        return iter(kept + fresh)
