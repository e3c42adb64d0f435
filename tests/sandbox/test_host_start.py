"""What a host's start reuses from its zygote: the syscall filter compiled once with the host's
pid filled in, and the compiled sources of the environments a run is working on."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path

import pytest

from envmill.tasks.sandbox import syscalls

SANDBOX = Path(syscalls.__file__).parent


@pytest.fixture
def seccomp():
    return pytest.importorskip("pyseccomp")


def test_the_filter_compiled_once_is_the_one_compiled_for_each_pid(seccomp):
    compiled = syscalls.pid_slots(seccomp)
    assert compiled is not None
    pids = [2, 3, 5, 36, 100, 4242, 65535, 4194303, *random.sample(range(2, 4194304), 40)]
    for pid in pids:
        assert syscalls._filled(*compiled, pid) == syscalls.build_filter(seccomp, pid), pid


def test_a_filter_laid_out_by_the_pid_is_compiled_for_each_host(seccomp):
    """Should a libseccomp order a pid's comparison by its value among others, filling in
    the pid would give a wrong program: the premise is checked, and each host compiles its
    own."""

    class ByPid(seccomp.SyscallFilter):
        def add_rule(self, action, name, *args):
            super().add_rule(action, name, *args)
            pid = next((a._data_b for a in args if name == "kill" and a._data_a == syscalls.LOW), 0)
            if pid % 2:  # an odd pid: one more rule, so the program grows
                super().add_rule(action, "getpgid")

    binding = type("Binding", (), {**vars(seccomp), "SyscallFilter": ByPid})
    assert syscalls.pid_slots(binding) is None
    installer = syscalls.Installer(binding)
    assert installer.program(4243) == syscalls.build_filter(binding, 4243)
    assert len(installer.program(4243)) != len(installer.program(4242))


@pytest.fixture
def host_module(monkeypatch):
    """The host's module as the zygote imports it (by file, beside the check runner)."""
    monkeypatch.syspath_prepend(str(SANDBOX))
    for name in ("host", "checkrunner", "framing"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    module = importlib.import_module("host")
    yield module
    for name in ("host", "checkrunner", "framing"):
        sys.modules.pop(name, None)


def source(n: int) -> str:
    return f"class Env{n}:\n    def tool(self) -> dict:\n        return {{'n': {n}}}\n"


def test_a_source_no_host_was_spawned_with_lately_is_dropped(host_module):
    host = host_module
    host.precompile(source(0))
    for _ in range(host.IDLE_SPAWNS):
        host.precompile(source(1))
    assert list(host.COMPILED) == [source(1)]


def test_sources_in_turn_stay_compiled_up_to_the_cap(host_module):
    host = host_module
    for _ in range(3):
        for n in range(host.MAX_COMPILED + 2):
            host.precompile(source(n))
    kept = [source(n) for n in range(2, host.MAX_COMPILED + 2)]
    assert list(host.COMPILED) == kept  # the newest eight, least recently spawned first
    host.forget_compiled(but=source(5))
    assert list(host.COMPILED) == [source(5)]
    host.forget_compiled(but=None)
    assert host.COMPILED == {}
