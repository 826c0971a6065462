"""``KStream.split()`` (Kafka 2.8+, KIP-418): ``Branched`` and ``BranchedKStream``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ._internals.stateless import KStreamBranch, PassThrough

if TYPE_CHECKING:
    from ._kstream import KStream

__all__ = ["Branched", "BranchedKStream"]


class Branched:
    """How one branch of ``KStream.split()`` is named and used (Kafka ``Branched``).

    - ``Branched.as_(name)``: the branch is in the result map under ``<splitName><name>``;
    - ``Branched.withFunction(fn, name=None)``: ``fn(branchStream)`` is stored in the map instead
      (nothing is stored if it returns ``None``);
    - ``Branched.withConsumer(fn, name=None)``: ``fn(branchStream)`` is called and nothing is stored.

    Without a name a branch is called ``<splitName><n>``: n = 1, 2, ... in ``branch`` order,
    0 for the default branch.

    Raises
    ------
    TypeError
        For a None name (``as_``/``withName``) or a None/non-callable chain.
    """

    def __init__(self, name: str | None = None, chainFunction: Callable | None = None,
                 chainConsumer: Callable | None = None) -> None:
        self.name, self.chainFunction, self.chainConsumer = name, chainFunction, chainConsumer

    @staticmethod
    def as_(name: str) -> "Branched":
        if name is None:
            raise TypeError("name cannot be null")
        return Branched(name)

    @staticmethod
    def withFunction(chain: Callable[["KStream"], "KStream | None"], name: str | None = None) -> "Branched":
        if chain is None or not callable(chain):
            raise TypeError("chain function cannot be null")
        return Branched(name, chain, None)

    @staticmethod
    def withConsumer(chain: Callable[["KStream"], None], name: str | None = None) -> "Branched":
        if chain is None or not callable(chain):
            raise TypeError("chain consumer cannot be null")
        return Branched(name, None, chain)

    def withName(self, name: str) -> "Branched":
        if name is None:
            raise TypeError("name cannot be null")
        return Branched(name, self.chainFunction, self.chainConsumer)

    def __repr__(self) -> str:
        return f"Branched(name={self.name!r})"


class BranchedKStream:
    """The result of ``KStream.split()`` (Kafka ``BranchedKStream``).

    A record goes to the first branch whose predicate is true, else to the default branch (if
    ``defaultBranch`` was called), else it is dropped. Branches keep the parent's
    repartition-required flag (rule RP-1). The topology has one ``KSTREAM-BRANCH-`` node named
    after ``split(named)`` and one pass-through child per branch named ``<splitName><branch name>``.
    """

    def __init__(self, source: "KStream", named) -> None:
        from ._config_objects import named as _named

        builder = source._builder
        self._source = source
        self._splitterName = builder._nameOrGenerate(_named("KStream.split", named), "KSTREAM-BRANCH-")
        self._predicates: list = []
        self._childNames: list[str] = []
        self._outputs: dict[str, "KStream"] = {}
        predicates, childNames = self._predicates, self._childNames
        builder._topology.addProcessor(self._splitterName, lambda: KStreamBranch(predicates, childNames), source._name)

    def branch(self, predicate: Callable, branched: Branched | None = None) -> "BranchedKStream":
        """Add a branch for records where ``predicate(key, value)`` is true (and no earlier
        predicate was). Returns ``self`` for chaining."""
        if predicate is None or not callable(predicate):
            raise TypeError("predicate can't be null")
        self._predicates.append(predicate)
        self._createBranch(branched or Branched(), len(self._predicates))
        return self

    def defaultBranch(self, branched: Branched | None = None) -> dict[str, "KStream"]:
        """Add the branch for records no predicate matched; returns the branches by name."""
        self._createBranch(branched or Branched(), 0)
        return self._outputs

    def noDefaultBranch(self) -> dict[str, "KStream"]:
        """Finish without a default branch (unmatched records are dropped); returns the branches by name."""
        return self._outputs

    def _createBranch(self, branched: Branched, index: int) -> None:
        from ._kstream import KStream

        source = self._source
        builder = source._builder
        childName = self._splitterName + (str(index) if branched.name is None else branched.name)
        self._childNames.append(childName)
        builder._newProcessorName(childName)  # Kafka burns a counter value here
        builder._topology.addProcessor(childName, PassThrough, self._splitterName)
        stream = KStream(builder, childName, source._sourceTopics, source._repartitionRequired, source._keySerde,
                         source._valueSerde)
        stream._keyChanger = source._keyChanger
        if branched.chainFunction is not None:
            result = branched.chainFunction(stream)
            if result is not None:
                self._outputs[childName] = result
        elif branched.chainConsumer is not None:
            branched.chainConsumer(stream)
        else:
            self._outputs[childName] = stream
