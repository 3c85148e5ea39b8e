"""Write the golden databases of the explorer's storage-history dimension (tests/explorer/goldens.py) with the OLD code.

For each older storage format (``goldens.COMMITS``: the commit whose code wrote it):

1. its source, ``git archive <commit>``, into a temporary directory;
2. a throwaway venv there: the package at that commit installed into it (``pip install --no-deps``), its
   dependencies (the same ``pyproject.toml`` ranges at every such commit) taken from this checkout's ``.venv``
   through a ``.pth`` file, so no index is asked and the old code runs on the dependencies the tests use;
3. each golden of that format: a child process of that venv's interpreter (tests/workers/golden_worker.py) runs the
   thread on mongo-java-server and is SIGKILLed right after the golden's effect called its provider (or stops at
   the interrupt); every collection is dumped. A run that still holds its thread's run lock is also resumed by
   the old code to its interrupt (*drained*) and dumped again;
4. ``tests/golden/format<N>_histories.json``: per golden, its dumps (extended JSON, canonical) and the ledger of
   every execution (the idempotency key each one passed its provider included), with the commit that wrote it.

Run it from the repository root: ``scripts/golden-histories`` (all formats) or ``scripts/golden-histories 2``.
It needs git (this repository's history), java, and the test extras in ``.venv``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from bson import json_util
from bson.json_util import CANONICAL_JSON_OPTIONS
from pymongo import MongoClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.explorer import goldens  # noqa: E402
from tests.servers.mongo_java_server import running_mongo_java_server  # noqa: E402


def old_venv(commit: str, where: Path) -> Path:
    """A venv under ``where`` holding the package at ``commit``; returns its interpreter."""
    source = where / "src"
    source.mkdir()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    python = where / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "uninstall", "-y", "setuptools"], check=False)  # the venv's own is too old to build it
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "_project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([*pip, "install", "--no-deps", "--no-build-isolation", str(source)], check=True)
    return python


def dump(uri: str, db_name: str) -> dict[str, list[dict[str, Any]]]:
    """Every document of every collection of ``db_name``, by collection, in ``_id`` order."""
    with MongoClient(uri) as client:
        db = client[db_name]
        return {name: list(db[name].find().sort("_id", 1)) for name in sorted(db.list_collection_names())}


def held_locks(database: dict[str, list[dict[str, Any]]]) -> list[str]:
    return [d["thread_id"] for d in database.get("thread_runs", []) if d.get("owner") is not None]


def run_worker(python: Path, spec: dict[str, Any], killed: bool, log: Path) -> None:
    with open(log, "a") as err:
        code = subprocess.run([str(python), "-m", "tests.workers.golden_worker", json.dumps(spec)], cwd=ROOT,
                              stderr=err, timeout=300).returncode
    if code != (-9 if killed else 0):
        raise SystemExit(f"{spec['golden']} ({spec['action']}): the worker exited {code}:\n{log.read_text()[-3000:]}")


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def one_golden(python: Path, uri: str, golden: goldens.Golden, tmp: Path) -> dict[str, Any]:
    """Run ``golden`` under the old code; its dumps and ledgers."""
    db_name = "golden_" + golden.name.replace(" ", "_").replace(".", "_")
    ledger, log = tmp / f"{db_name}.jsonl", tmp / f"{db_name}.log"
    with MongoClient(uri) as client:
        client.drop_database(db_name)
    spec = {"uri": uri, "db": db_name, "golden": golden.name, "ledger": str(ledger), "action": "start"}
    run_worker(python, spec, goldens.KILLS[golden.stop] is not None, log)
    made = {"in_flight": {"db": dump(uri, db_name), "ledger": records(ledger)}}
    if held_locks(made["in_flight"]["db"]) != ([goldens.THREAD] if golden.in_flight else []):
        raise SystemExit(f"{golden.name}: run locks held {held_locks(made['in_flight']['db'])}, in flight: {golden.in_flight}")
    if golden.in_flight:
        run_worker(python, {**spec, "action": "drain"}, False, log)
        made["drained"] = {"db": dump(uri, db_name), "ledger": records(ledger)}
        if held_locks(made["drained"]["db"]):
            raise SystemExit(f"{golden.name}: still held after the drain")
    with MongoClient(uri) as client:
        client.drop_database(db_name)
    return made


def written(value: Any, indent: str = "") -> str:
    """``value`` as canonical extended JSON, its dicts opened line by line and each item of a list on a line of its
    own (a document, a ledger record): a file to read and to diff."""
    inner = indent + " "
    if isinstance(value, dict) and value and not isinstance(next(iter(value.values())), (int, str)):
        items = [f"{inner}{json.dumps(k)}: {written(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value:
        items = [inner + json_util.dumps(v, json_options=CANONICAL_JSON_OPTIONS) for v in value]
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json_util.dumps(value, json_options=CANONICAL_JSON_OPTIONS)


def main(argv: list[str]) -> int:
    formats = [int(a) for a in argv] or sorted(goldens.COMMITS)
    with running_mongo_java_server() as uri:
        for version in formats:
            commit = goldens.COMMITS[version]
            with tempfile.TemporaryDirectory(prefix=f"old-fmt{version}-") as tmp:
                python = old_venv(commit, Path(tmp))
                made = {g.name: one_golden(python, uri, g, Path(tmp)) for g in goldens.GOLDENS if g.format == version}
            about = {"format": version, "commit": commit, "made_by": "scripts/golden-histories", "server": "mongo-java-server"}
            goldens.path(version).write_text(written({"about": about, "goldens": made}) + "\n")
            print(f"format {version} ({commit[:7]}): {len(made)} goldens -> {goldens.path(version).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
