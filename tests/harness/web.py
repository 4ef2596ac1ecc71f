"""The web pages' test parts: `acx builder` started as a real process on 127.0.0.1 (stopped by PID),
and Debian's chromium driven by chromedriver through selenium, one browser per test session.

chromium and chromium-driver come from `make peers` (scripts/install-peers.sh); selenium from the
dev extra. A missing browser skips on a developer machine and fails in CI (env.missing)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness import env
from tests.harness.servers import stop_process

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1360,1000")
SCREENSHOTS = Path(os.environ.get("ACX_SCREENSHOTS", env.REPO / "build" / "screenshots"))


@dataclass
class Builder:
    """A running `acx builder`: its URL and process."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> int:
        stop_process(self.proc)
        return int(self.proc.returncode)


def start_builder(workdir: Path, *, port: int = 0) -> Builder:
    """`acx builder --port 0` in `workdir` (its cwd and HOME), read its URL from the first line."""
    log = workdir / "builder.log"
    fh = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "acxoci", "builder", "--port", str(port)], cwd=workdir,
        stdout=subprocess.PIPE, stderr=fh, stdin=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "HOME": str(workdir)},
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 20
    line = b""
    while time.monotonic() < deadline and not line:
        line = proc.stdout.readline()
        if proc.poll() is not None and not line:
            break
    m = re.search(rb"http://127\.0\.0\.1:(\d+)/", line)
    if m is None:
        stop_process(proc)  # type: ignore[arg-type]
        raise RuntimeError(f"acx builder did not start: {line!r} {log.read_text()[-2000:]}")
    return Builder(m.group(0).decode(), int(m.group(1)), proc, log)  # type: ignore[arg-type]


def browser_paths() -> tuple[str, str]:
    """(chromium, chromedriver), or skip/fail by the env rule."""
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        env.missing("chromium and chromium-driver are not installed; run `make peers`")
    try:
        import selenium  # noqa: F401
    except ImportError:
        env.missing("selenium is not installed; run `make venv` (the dev extra)")
    assert chromium is not None and driver is not None
    return chromium, driver


@contextmanager
def chromium(downloads: Path) -> Iterator[Any]:
    """One headless chromium with a fresh profile, downloads going to `downloads`, console logged."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = browser_paths()
    profile = tempfile.mkdtemp(prefix="acx-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        driver.execute_cdp_cmd("Browser.setDownloadBehavior",
                               {"behavior": "allow", "downloadPath": str(downloads)})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console(driver: Any) -> list[dict[str, Any]]:
    """Browser console entries since the last call."""
    entries: list[dict[str, Any]] = driver.get_log("browser")
    return entries


def wait_for(predicate: Any, timeout: float = 10.0, what: str = "condition") -> Any:
    """Poll `predicate()` until truthy (returned) or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def screenshot(driver: Any, name: str) -> Path:
    """Save a PNG of the current page under SCREENSHOTS (build/screenshots, or docs/img for
    `make screenshots`)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
