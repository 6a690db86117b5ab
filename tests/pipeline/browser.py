"""A real MLflow server on 127.0.0.1 and a headless Chromium to look at its pages, for the
screenshot test of the run list's view (tests/pipeline/tracking/test_mlflow_log.py).

The browser is Debian's ``chromium`` (scripts/install.sh installs it; ``$CHROMIUM`` names
another), driven by Playwright's Python package (the ``test`` extra): Playwright's own browser
download is not reachable from the package registries.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.requirements import missing

#: What the machine's closed network needs (without them Chromium keeps trying Google's hosts).
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

#: Where each of ``ids`` (the grid's column ids) is on the page, and what a person sees of it:
#: the header's name (its text, not its cell) and the first row's value, each hit-tested at its
#: left end, middle and right end (``hits``: a part cut by its column, scrolled out of the grid
#: or under another panel is not hit; a column's resize handle, transparent, is looked through),
#: and ``whole``: its own box does not clip it (an ellipsis).
_MEASURE = """(ids) => {
  const seen = (element) => {
    const r = element.getBoundingClientRect();
    const y = (r.top + r.bottom) / 2;
    const xs = [r.left + 1, (r.left + r.right) / 2, r.right - 1];
    const top = (x) => document.elementsFromPoint(x, y).find((e) => !e.classList.contains('ag-header-cell-resize'));
    const hits = xs.map((x) => { const hit = top(x); return Boolean(hit) && (element === hit || element.contains(hit)); });
    const whole = element.scrollWidth <= Math.ceil(r.width);  // a box that clips its own text
    return {left: Math.round(r.left), right: Math.round(r.right), text: element.textContent, hits: r.width > 0 ? hits : [false, false, false], whole};
  };
  const byId = (selector, id) => [...document.querySelectorAll(selector)].find((e) => e.getAttribute('col-id') === id);
  const firstRow = (id) => [...document.querySelectorAll('[role=row][row-index="0"] [role=gridcell]')].find((e) => e.getAttribute('col-id') === id);
  const text = (cell) => [...cell.querySelectorAll('*')].reverse().find((e) => e.children.length === 0 && e.textContent.trim()) || cell;
  const out = {};
  for (const id of ids) {
    const header = byId('.ag-header-cell', id);
    const name = header && header.querySelector('[data-testid^="sort-header-"]');
    const cell = firstRow(id);
    out[id] = {name: name ? seen(name) : null, cell: cell ? seen(text(cell)) : null};
  }
  return out;
}"""


def chromium() -> str:
    """The browser's path: ``$CHROMIUM``, else ``chromium`` on the PATH."""
    found = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not found:
        missing("no chromium for the view's screenshot test: bash scripts/install.sh installs it")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(store_uri: str, directory: Path) -> Iterator[str]:
    """``mlflow server`` on ``store_uri`` at a free port of 127.0.0.1; yields its address."""
    port = _free_port()
    command = [str(Path(sys.executable).with_name("mlflow")), "server", "--backend-store-uri"]
    command += [store_uri, "--host", "127.0.0.1", "--port", str(port)]
    address = f"http://127.0.0.1:{port}"
    with open(directory / "mlflow-server.log", "w") as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=directory
        )
    try:
        deadline = time.monotonic() + 180  # minutes at load 10
        while True:
            try:
                with urllib.request.urlopen(f"{address}/health", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"mlflow server did not answer: {directory}") from None
                time.sleep(0.5)
        yield address
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def look(url: str, ids: list[str], width: int, height: int, screenshot: Path) -> dict:
    """Open ``url`` in headless Chromium at ``width`` x ``height``, wait until the run list has
    rows and its layout holds still, save a screenshot, and measure ``ids`` (``_MEASURE``)."""
    try:
        from playwright.sync_api import sync_playwright  # the test extra: its absence is a skip
    except ImportError:
        missing("playwright is not installed: pip install -e '.[test]' (bash scripts/install.sh)")
    browser_path = chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_path,
            args=CHROMIUM_ARGS,
            # the scrollbars a person has on Linux, which take their width from the grid
            ignore_default_args=["--hide-scrollbars"],
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url, timeout=120_000)
            page.wait_for_selector('[role=row][row-index="0"] [role=gridcell]', timeout=120_000)
            measured, deadline = None, time.monotonic() + 60
            while time.monotonic() < deadline:  # the view's widths come after the first paint
                page.wait_for_timeout(1000)
                again = page.evaluate(_MEASURE, ids)
                if again == measured:
                    break
                measured = again
            page.screenshot(path=str(screenshot))
            return json.loads(json.dumps(measured))
        finally:
            browser.close()
