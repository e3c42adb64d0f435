"""The console entry point's exits: one line, the right code, Ctrl-C however it surfaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from envmill.flows import cli
from envmill.flows.runtime import interrupt


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


def _chained_disk_full() -> BaseException:
    """What a run that hit a full disk raises: the kernel's error under whatever wrapped it."""
    from envmill.warehouse.space import DiskFull

    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError as exc:
            raise DiskFull(Path("/data")) from exc
    except DiskFull:
        try:
            raise OSError(28, "No space left on device")  # recording the run failed as well
        except OSError as second:
            return second


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (OSError(28, "No space left on device"), "the disk is full"),
        (RuntimeError("task failed"), None),
    ],
)
def test_a_full_disk_is_one_line_that_names_it(monkeypatch, capsys, raised, said):
    if said is None:  # a wrapper whose cause is the full disk
        raised.__cause__ = _chained_disk_full()
        said = "the disk holding /data is full"
    monkeypatch.setattr(cli, "app", _raise(raised))
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"envmill: error: {said}") and "rerun the same command" in line


def test_a_run_is_refused_before_it_starts_on_an_almost_full_disk(tmp_path, monkeypatch):
    import os

    from envmill.warehouse.space import DiskFull, check_free_space

    real = os.statvfs(tmp_path)

    class Nearly:
        f_frsize, f_bavail = 4096, 10 * 256  # 10 MB

    monkeypatch.setattr(os, "statvfs", lambda path: Nearly)
    with pytest.raises(DiskFull, match=r"^only 10 MB free on the disk holding .* needs 64 MB"):
        check_free_space(tmp_path / "new" / "data")
    assert not (tmp_path / "new").exists()
    monkeypatch.setattr(os, "statvfs", lambda path: real)
    check_free_space(tmp_path, need_mb=0)
