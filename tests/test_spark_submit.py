"""``spark-submit`` to a real (standalone) Spark cluster, shipping kafkatool as docs/spark.md says.

A master and a worker run as their own JVMs on localhost; the worker starts an executor JVM of its
own, whose Python workers run in an environment *without* kafkatool: it reaches them only through
``--py-files``. The scan's summary must equal the in-process one.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

from .conftest import JAVA17, PROJECT_ROOT, corpus_root

pytestmark = pytest.mark.spark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env_without_kafkatool(root: Path) -> Path:
    """A venv that sees this one's packages but not kafkatool (an editable install is a .pth file, and
    .pth files in a directory named by another .pth are not processed), as on a cluster node."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    import pyspark

    root = tmp_path_factory.mktemp("standalone")
    spark_home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOG_DIR=str(root), SPARK_NO_DAEMONIZE="1")
    if not env.get("JAVA_HOME") and os.path.isdir(JAVA17):
        env["JAVA_HOME"] = JAVA17
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    spark_class = str(spark_home / "bin" / "spark-class")
    procs = []
    logs = {name: open(root / f"{name}.log", "w") for name in ("master", "worker")}  # noqa: SIM115
    try:
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
             "--webui-port", str(_free_port())],
            env=env, stdout=logs["master"], stderr=subprocess.STDOUT, start_new_session=True))
        procs.append(subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", master_url, "--host", "127.0.0.1",
             "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(root / "work")],
            env=env, stdout=logs["worker"], stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 120
        while "Successfully registered with master" not in (root / "worker.log").read_text():
            assert time.monotonic() < deadline, (root / "worker.log").read_text()[-3000:]
            assert all(p.poll() is None for p in procs), (root / "worker.log").read_text()[-3000:]
            time.sleep(0.5)
        yield master_url, root, env
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        for f in logs.values():
            f.close()


def test_spark_submit_ships_kafkatool_to_a_cluster(spark, cluster, tmp_path):
    from typer.testing import CliRunner

    from kafkatool.cli.main import app

    master_url, root, env = cluster
    python = _env_without_kafkatool(tmp_path / "node-env")
    probe = subprocess.run([str(python), "-c", "import crc32c, pyarrow, construct; import kafkatool"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert "No module named 'kafkatool'" in probe.stderr, probe.stderr  # the deps are there, kafkatool is not

    # docs/spark.md: build the wheel, ship it as a .zip (PySpark puts only .zip/.egg/.jar py-files on the path).
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp_path / "dist"), str(PROJECT_ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("kafkatool-*.whl")
    shipped = tmp_path / "dist" / "kafkatool.zip"
    shutil.copyfile(wheel, shipped)
    entry = tmp_path / "scan_entry.py"
    with zipfile.ZipFile(wheel) as zf:
        entry.write_bytes(zf.read("kafkatool/cli/spark_submit.py"))

    kafka = corpus_root() / "kafka"
    paths = [str(kafka / "logdir"), str(kafka / "recovery" / "crc-flip" / "before")]
    submit_env = dict(env, PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    submit_env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(Path(env["SPARK_HOME"]) / "bin" / "spark-submit"), "--master", master_url, "--py-files", str(shipped),
         "--conf", "spark.executor.memory=1g", str(entry), "--master", "", *paths,
         "--out", str(tmp_path / "out"), "--records", "-f", "jsonl"],
        env=submit_env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # 1: the CRC mismatch finding
    remote = sorted(done.stdout.splitlines())
    # progress reaches spark-submit's stderr (it merges the Python driver's own stderr into its stdout)
    assert "kafkatool spark scan: batches: started" in done.stderr
    assert "kafkatool spark scan" not in done.stdout

    local = CliRunner().invoke(app, ["spark", "scan", *paths, "--out", str(tmp_path / "local"), "--records",
                                     "-f", "jsonl"])
    assert local.exit_code == 1, local.output[-3000:]
    assert remote == sorted(local.stdout.splitlines())
    total = json.loads(remote[-1]) if '"total"' in remote[-1] else next(
        json.loads(line) for line in remote if '"scope": "total"' in line)
    assert total["batches"] > 100 and total["crc_failures"] == 1
    # the executor (a JVM the worker started) fetched the zip into its own work dir
    assert list((root / "work").glob("app-*/*/kafkatool.zip"))
