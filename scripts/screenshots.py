#!/usr/bin/env python3
"""The screenshots of docs/inspector.md, taken again: ``scripts/screenshots``.

Starts mongo-java-server (tests/servers), leaves the on-call threads of tests/oncall_threads.py on it (real processes,
real SIGKILLs), serves the inspector, and photographs each thread's page with Debian's chromium driven by
Playwright, as tests/test_ui_browser_oncall.py opens them: ``docs/images/oncall-<thread>.png``.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402
from pymongo import MongoClient  # noqa: E402

from langgraph_durable_mongodb.storage.schema import CollectionNames  # noqa: E402
from langgraph_durable_mongodb.ui.actions import Actions  # noqa: E402
from langgraph_durable_mongodb.ui.app import create_app  # noqa: E402
from langgraph_durable_mongodb.ui.guard import Guard  # noqa: E402
from langgraph_durable_mongodb.views.reader import ThreadViews  # noqa: E402
from tests import oncall_threads  # noqa: E402
from tests.servers.common import free_port  # noqa: E402
from tests.servers.mongo_java_server import running_mongo_java_server  # noqa: E402

DB = "durable_oncall"
IMAGES = ROOT / "docs" / "images"
#: Pixels: the page's width (the height is the page's own).
WIDTH = 1400


def _serve(client: MongoClient) -> tuple[str, object]:
    import uvicorn

    names = CollectionNames()
    app = create_app(ThreadViews(client, DB, names), Actions(client, DB, names), Guard())
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{server.config.port}", server


def main() -> int:
    with running_mongo_java_server() as uri, MongoClient(uri) as client:
        client.drop_database(DB)
        oncall_threads.leave(uri, DB)
        base, server = _serve(client)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": WIDTH, "height": 900})
                for thread_id in oncall_threads.THREADS:
                    page.goto(f"{base}/threads/{thread_id}")
                    page.wait_for_load_state("networkidle")
                    path = IMAGES / f"oncall-{thread_id}.png"
                    page.screenshot(path=str(path), full_page=True)
                    print(path.relative_to(ROOT))
                browser.close()
        finally:
            server.should_exit = True
            client.drop_database(DB)
    return 0


if __name__ == "__main__":
    sys.exit(main())
