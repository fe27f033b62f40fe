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


def test_pause_resumes_once():
    outer = collector.pause()
    inner = collector.pause()
    inner()
    inner()  # a second call must not end the outer pause
    assert not gc.isenabled()
    outer()
    assert gc.isenabled()


def test_after_sending_resumes_on_close():
    parts = collector.AfterSending([b"a", b"b"], collector.pause())
    assert list(parts) == [b"a", b"b"] and not gc.isenabled()
    parts.close()
    assert gc.isenabled()
    parts.close()
    assert gc.isenabled()


def test_after_sending_resumes_when_dropped_unclosed():
    parts = collector.AfterSending([b"x"], collector.pause())
    assert not gc.isenabled()
    del parts
    assert gc.isenabled()


def test_candidates_response_resumes_once_sent():
    """The handler's body is what the WSGI server closes after sending."""
    import webob

    from placement.handlers import allocation_candidate
    assert allocation_candidate  # the handler builds AfterSending bodies
    resp = webob.Response(app_iter=collector.AfterSending([b"{}"], collector.pause()))
    env = webob.Request.blank("/").environ
    body = resp(env, lambda *a: None)
    assert list(body) == [b"{}"] and not gc.isenabled()
    body.close()
    assert gc.isenabled()
