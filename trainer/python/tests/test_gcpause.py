"""gcpause: what is frozen escapes the collector until unfrozen, and Pauses counts collections."""

import gc

from schooner_serve import gcpause


class Node:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it


def test_a_frozen_cycle_survives_a_collection_and_is_freed_once_unfrozen():
    import weakref
    try:
        n = Node()
        ref = weakref.ref(n)
        assert gcpause.freeze() > 0
        del n
        gc.collect()
        assert ref() is not None
        gc.unfreeze()
        gc.collect()
        assert ref() is None
    finally:
        gc.unfreeze()


def test_pauses_count_collections_by_generation_while_installed_only():
    p = gcpause.Pauses().install()
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        p.remove()
    gc.collect(2)
    s = p.summary()
    assert s["collections"]["gen0"] >= 1 and s["collections"]["gen2"] == 1
    assert s["ms"]["gen2"] >= 0 and s["max_ms"] >= 0
    assert [g for _t, _d, g in p.spans] == [2]
    t = p.spans[0][0]
    assert p.inside(t, t + 1) and not p.inside(t + 1, t + 2)
