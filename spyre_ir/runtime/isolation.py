"""Failure isolation: find the op that makes a partition fail to compile.

A partition that fails to compile should not take the whole graph to CPU. The backend asks
:func:`first_failing_node` which op is to blame and compiles the rest without it, so only
that op runs on CPU. The search compiles prefixes of the partition (its first ``k`` ops, in
graph order, with every value a later op needs as an output) and bisects on ``k``: the
smallest failing prefix ends in the culprit. That takes about log2(ops) compiles of at most
the partition's size, and finds an op that fails alone as well as one that fails only after
the ops before it (a layout they impose, say). A failure that needs ops *after* the culprit
too is not monotone in ``k``; the backend then repeats the search on what is left.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from torch import fx

__all__ = ["first_failing_node", "prefix_graph"]


def _compute_nodes(gm: fx.GraphModule) -> list[fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function"]


def prefix_graph(gm: fx.GraphModule, count: int) -> fx.GraphModule:
    """The first ``count`` call_function nodes of ``gm`` as a graph of their own: the
    placeholders they read, and as outputs every value used outside the prefix. A node
    with several results (``var_mean``) keeps its ``getitem`` users, so every output is a
    tensor."""
    nodes = _compute_nodes(gm)
    keep = set(nodes[:count])
    for node in nodes[:count]:
        keep.update(u for u in node.users if u.target is operator.getitem)
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    for node in gm.graph.nodes:  # placeholders first, in order, only those read
        if node.op == "placeholder" and any(u in keep for u in node.users):
            env[node] = graph.placeholder(node.name)
            env[node].meta = dict(node.meta)
    for node in gm.graph.nodes:
        if node in keep:
            env[node] = graph.node_copy(node, lambda a: env[a])
    outputs = [
        n
        for n in gm.graph.nodes
        if n in keep
        and any(u not in keep for u in n.users)
        and not isinstance(n.meta.get("val"), (tuple, list))
    ]
    graph.output(tuple(env[n] for n in outputs))
    return fx.GraphModule(gm, graph)


def first_failing_node(gm: fx.GraphModule, fails: Callable[[fx.GraphModule], BaseException | None]
                       ) -> tuple[fx.Node, BaseException] | None:  # fmt: skip
    """The node whose addition makes a prefix of ``gm`` fail, with the prefix's error;
    None if no prefix fails (the failure needs the whole partition). ``fails(graph)``
    compiles a graph and returns the exception it raised, if any."""
    nodes = _compute_nodes(gm)
    good, bad, error = 0, len(nodes), None  # prefix `good` compiles, prefix `bad` fails
    while bad - good > 1:
        mid = (good + bad) // 2
        found = fails(prefix_graph(gm, mid))
        if found is None:
            good = mid
        else:
            bad, error = mid, found
    if error is None:  # the full prefix is the partition with its own outputs
        error = fails(prefix_graph(gm, bad)) if bad else None
        if error is None:
            return None
    return nodes[bad - 1], error
