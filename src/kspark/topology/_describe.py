"""Kafka's ``TopologyDescription`` text, byte for byte.

Kafka prints a sub-topology's nodes sorted by sub-tree size (largest first) then name, which is
easy; but the ``-->`` / ``<--`` lists, a processor's ``stores`` and a source's ``topics`` come out
of Java collections whose order depends on Java's ``String.hashCode``:

- stores and topics are ``HashSet``s, printed in hash-bucket order;
- ``InternalTopologyBuilder.describeSubtopology`` connects nodes while iterating a ``HashMap`` of
  the sub-topology's nodes, and inserts every node into its neighbours' ``TreeSet``s ordered by
  the *current* sub-tree size, which is still growing. The ``TreeSet`` keeps the order it had at
  insertion time, so a node's successors are not always sorted by their final size.

This module replays exactly that: Java's ``HashMap`` iteration order and ``TreeMap``'s
red-black insertion with a comparator whose keys change.
"""

from __future__ import annotations

__all__ = ["javaHashOrder", "describeSubtopologyNodes"]


def _javaStringHash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def _bucketHash(s: str) -> int:
    h = _javaStringHash(s)
    return h ^ (h >> 16)


def javaHashOrder(items, fromCollection: bool = False) -> list[str]:
    """Iteration order of a Java ``HashSet<String>``/``HashMap<String, ?>`` filled with ``items`` in
    the given order (``new HashSet<>()`` + ``add``; ``fromCollection`` for ``new HashSet<>(coll)``).

    Buckets are visited in index order; within a bucket, insertion order (resizes split buckets
    keeping relative order). Tree bins (8+ colliding names) are not modelled.
    """
    items = list(dict.fromkeys(items))
    n = len(items)
    capacity = 16
    if fromCollection:
        wanted = max(int(n / 0.75) + 1, 16)
        while capacity < wanted:
            capacity *= 2
    while n > capacity * 0.75:
        capacity *= 2
    mask = capacity - 1
    return sorted(items, key=lambda s: _bucketHash(s) & mask)


class _DescNode:
    __slots__ = ("name", "size", "predecessors", "successors")

    def __init__(self, name: str) -> None:
        self.name = name
        self.size = 1
        self.predecessors = _TreeSet()
        self.successors = _TreeSet()


def _compare(a: _DescNode, b: _DescNode) -> int:
    """Kafka's ``InternalTopologyBuilder.NodeComparator``: larger sub-tree first, then by name."""
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    return (a.name > b.name) - (a.name < b.name)


class _Entry:
    __slots__ = ("key", "left", "right", "parent", "black")

    def __init__(self, key, parent) -> None:
        self.key, self.parent = key, parent
        self.left = self.right = None
        self.black = True


class _TreeSet:
    """``java.util.TreeSet`` with ``NODE_COMPARATOR``: a port of ``TreeMap.put`` and its
    red-black ``fixAfterInsertion``, so a comparator with mutated keys places new elements
    exactly where Java does."""

    def __init__(self) -> None:
        self.root: _Entry | None = None

    def add(self, key) -> None:
        t = self.root
        if t is None:
            self.root = _Entry(key, None)
            return
        while True:
            parent = t
            cmp = _compare(key, t.key)
            if cmp < 0:
                t = t.left
            elif cmp > 0:
                t = t.right
            else:
                return
            if t is None:
                break
        e = _Entry(key, parent)
        if cmp < 0:
            parent.left = e
        else:
            parent.right = e
        self._fixAfterInsertion(e)

    def __iter__(self):
        out, stack, t = [], [], self.root
        while stack or t is not None:
            while t is not None:
                stack.append(t)
                t = t.left
            t = stack.pop()
            out.append(t.key)
            t = t.right
        return iter(out)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    # -- java.util.TreeMap's red-black helpers
    @staticmethod
    def _colorOf(p) -> bool:
        return True if p is None else p.black

    @staticmethod
    def _parentOf(p):
        return None if p is None else p.parent

    @staticmethod
    def _setColor(p, black: bool) -> None:
        if p is not None:
            p.black = black

    @staticmethod
    def _leftOf(p):
        return None if p is None else p.left

    @staticmethod
    def _rightOf(p):
        return None if p is None else p.right

    def _rotateLeft(self, p) -> None:
        if p is not None:
            r = p.right
            p.right = r.left
            if r.left is not None:
                r.left.parent = p
            r.parent = p.parent
            if p.parent is None:
                self.root = r
            elif p.parent.left is p:
                p.parent.left = r
            else:
                p.parent.right = r
            r.left = p
            p.parent = r

    def _rotateRight(self, p) -> None:
        if p is not None:
            l = p.left  # noqa: E741
            p.left = l.right
            if l.right is not None:
                l.right.parent = p
            l.parent = p.parent
            if p.parent is None:
                self.root = l
            elif p.parent.right is p:
                p.parent.right = l
            else:
                p.parent.left = l
            l.right = p
            p.parent = l

    def _fixAfterInsertion(self, x) -> None:
        x.black = False
        parentOf, leftOf, rightOf, colorOf, setColor = (
            self._parentOf, self._leftOf, self._rightOf, self._colorOf, self._setColor)
        while x is not None and x is not self.root and not x.parent.black:
            if parentOf(x) is leftOf(parentOf(parentOf(x))):
                y = rightOf(parentOf(parentOf(x)))
                if not colorOf(y):
                    setColor(parentOf(x), True)
                    setColor(y, True)
                    setColor(parentOf(parentOf(x)), False)
                    x = parentOf(parentOf(x))
                else:
                    if x is rightOf(parentOf(x)):
                        x = parentOf(x)
                        self._rotateLeft(x)
                    setColor(parentOf(x), True)
                    setColor(parentOf(parentOf(x)), False)
                    self._rotateRight(parentOf(parentOf(x)))
            else:
                y = leftOf(parentOf(parentOf(x)))
                if not colorOf(y):
                    setColor(parentOf(x), True)
                    setColor(y, True)
                    setColor(parentOf(parentOf(x)), False)
                    x = parentOf(parentOf(x))
                else:
                    if x is leftOf(parentOf(x)):
                        x = parentOf(x)
                        self._rotateRight(x)
                    setColor(parentOf(x), True)
                    setColor(parentOf(parentOf(x)), False)
                    self._rotateLeft(parentOf(parentOf(x)))
        self.root.black = True


def _updateSize(node: _DescNode, delta: int) -> None:
    node.size += delta
    for p in node.predecessors:
        _updateSize(p, delta)


def describeSubtopologyNodes(names: list[str], parentsOf: dict[str, list[str]]):
    """Replay ``InternalTopologyBuilder.describeSubtopology`` for one node group.

    ``names`` in topology insertion order; ``parentsOf[name]`` in the order given to
    ``addProcessor``/``addSink``. Returns ``(nodes in print order, successors, predecessors)``
    with the two maps from name to a list of names in print order.
    """
    nodes = {name: _DescNode(name) for name in javaHashOrder(names)}
    for node in nodes.values():
        for parentName in parentsOf.get(node.name, []):
            parent = nodes[parentName]
            node.predecessors.add(parent)
            parent.successors.add(node)
            _updateSize(parent, node.size)
    final = _TreeSet()
    for node in nodes.values():
        final.add(node)
    ordered = [n.name for n in final]
    successors = {n.name: [s.name for s in n.successors] for n in nodes.values()}
    predecessors = {n.name: [p.name for p in n.predecessors] for n in nodes.values()}
    return ordered, successors, predecessors
