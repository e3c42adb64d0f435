"""The console entry point's exits: one line, the right code, Ctrl-C however it surfaces."""

from __future__ import annotations

import pytest

from envmill.flows import cli, interrupt


@pytest.fixture
def fired():
    interrupt._fired.set()
    yield
    interrupt._fired.clear()


def _raise(exc: BaseException):
    def app(**_kwargs):
        raise exc

    return app


def test_an_interrupt_wrapped_by_a_library_still_exits_130(monkeypatch, capsys, fired):
    monkeypatch.setattr(
        cli, "app", _raise(RuntimeError("Error calling function: KeyboardInterrupt"))
    )
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 130
    assert "interrupted; finished batches are kept" in capsys.readouterr().err


def test_an_unforeseen_error_is_one_line_and_exit_1(monkeypatch, capsys):
    monkeypatch.setattr(cli, "app", _raise(RuntimeError("boom")))
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.strip() == "envmill: error: RuntimeError: boom"


def test_a_plain_keyboard_interrupt_exits_130(monkeypatch, capsys):
    monkeypatch.setattr(cli, "app", _raise(KeyboardInterrupt()))
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 130
