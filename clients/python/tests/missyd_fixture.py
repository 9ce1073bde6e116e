"""Runs the real missyd binary ($MISSYD_BIN) on a temporary MISSY_HOME for the tests.

DaemonTestCase starts a daemon in setUp (with the class's CONFIG_YAML as its config
file, passed with --config) and stops it in tearDown; ``self.client`` talks to it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from missy_client import MissyClient

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)  # clients/python
REPO_ROOT = os.path.dirname(os.path.dirname(PACKAGE_ROOT))

# Small numbers so that compaction has history to cover after a few turns.
DEFAULT_CONFIG_YAML = """\
context:
  log_level: warn
  budget:
    fresh_tail_count: 4
    system_reserve: 200
    tool_definitions_reserve: 200
"""


def missyd_binary() -> str:
    path = os.environ.get("MISSYD_BIN") or os.path.join(REPO_ROOT, "build", "bin", "missyd")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"missyd binary not found at {path}: set MISSYD_BIN to "
                           "build/bin/missyd (make test does)")
    return path


def short_temp_dir() -> str:
    """A temporary directory whose socket path fits sockaddr_un (108 bytes)."""
    path = tempfile.mkdtemp(prefix="missy-py-")
    if len(os.path.join(path, "missyd.sock")) > 100:
        shutil.rmtree(path, ignore_errors=True)
        path = tempfile.mkdtemp(prefix="missy-py-", dir="/tmp")
    return path


class Daemon:
    """One missyd process on its own home directory."""

    def __init__(self, config_yaml: str = DEFAULT_CONFIG_YAML, home: str = "") -> None:
        self.home = home or short_temp_dir()
        self.config_path = os.path.join(self.home, "config.yaml")
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write(config_yaml)
        self.socket_path = os.path.join(self.home, "missyd.sock")
        self.log_path = os.path.join(self.home, "missyd.log")
        self.proc: subprocess.Popen | None = None
        self.exit_code: int | None = None  # of the last stop

    def start(self, timeout: float = 8.0) -> None:
        env = dict(os.environ, MISSY_HOME=self.home)
        env.pop("MISSY_SOCKET", None)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([missyd_binary(), "--config", self.config_path],
                                         env=env, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"missyd exited with {self.proc.returncode} during start:\n"
                                   f"{self.log()}")
            if self._answers():
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"missyd did not answer within {timeout} s:\n{self.log()}")

    def _answers(self) -> bool:
        if not os.path.exists(self.socket_path):
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                s.connect(self.socket_path)
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n"
                          b"Connection: close\r\n\r\n")
                return s.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout``; the exit code (the last one when the
        daemon is not running)."""
        if self.proc is None:
            return self.exit_code
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.exit_code = proc.returncode
        return self.exit_code

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


class DaemonTestCase(unittest.TestCase):
    """A test case with a fresh daemon per test (``self.daemon``, ``self.client``)."""

    CONFIG_YAML = DEFAULT_CONFIG_YAML

    def setUp(self) -> None:
        self.started = time.monotonic()
        self.daemon = Daemon(self.CONFIG_YAML)
        self.addCleanup(self.daemon.remove)
        self.daemon.start()
        self.client = MissyClient(self.daemon.socket_path, timeout=10.0)
        self.addCleanup(self.client.close)

    def tearDown(self) -> None:
        self.client.close()
        code = self.daemon.stop()
        # A clean SIGTERM shutdown exits 0: anything else is a daemon fault worth seeing.
        self.assertEqual(code, 0, f"missyd exit code {code}; log:\n{self.daemon.log()}")
        self.assertLess(time.monotonic() - self.started, 10.0, "test took 10 s or more")
