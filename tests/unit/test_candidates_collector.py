"""The cyclic collector is off during a candidate search and restored after."""

import gc

import pytest

from placement.objects.candidates import collector


def test_paused_switches_collection_off_and_back_on():
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer search is still running
    assert gc.isenabled()


def test_paused_restores_collection_after_an_error():
    with pytest.raises(ValueError):
        with collector.paused():
            raise ValueError("no candidates")
    assert gc.isenabled()


def test_paused_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
