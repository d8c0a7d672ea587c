"""Fixtures of the browser tests: a live Streamlit server and Debian's chromium (through Playwright).

Never ``playwright install``: the tests drive /usr/bin/chromium and are skipped (not failed)
when it is missing.
"""
import os

import pytest

from browser_support import CHROMIUM, CHROMIUM_ARGS, ROOT, START_TIMEOUT_S, _wait_healthy, start_server, stop_server


@pytest.fixture(scope="session")
def server():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (install Debian's chromium: make chromium)")
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    proc, url, log = start_server()
    try:
        _wait_healthy(url, proc, START_TIMEOUT_S)
        yield url
    finally:
        stop_server(proc, log)


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (install Debian's chromium: make chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)
    try:
        yield pg
    finally:
        ctx.close()
