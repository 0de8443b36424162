"""`audit.prepare_inputs` on bad input and failures (no Spark, no server).

It leaves nothing in the temporary directory when it fails part way: the binlog's events are staged as Parquet and
the ledger beside them before Spark starts; a failure after a directory was made (a staging worker dying, a full
disk while the ledger is written) reaches the CLI as an error (exit 2) with no `Inputs` to remove them from. A
ledger line that is not a JSON object is left to Spark's reader, which marks it corrupt (check 10), never to
pyarrow, which makes `null` a row of nulls and crashes the process on a file that starts with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from binlogd.spark_analytics import audit

from tests.oracle_data import oracle_dir

CONN = (b'{"r":"conn","seq":1,"conn":1,"ts_us":1,"thread_id":2,"peer":"127.0.0.1:1","user":"root","server_id":11,'
        b'"capability":4,"capability_set":true,"skip_replication":false,"dump_flags":1,"checksum":true,'
        b'"start_file":"mysql-bin.000001","start_pos":4,"compat":"binlogd"}\n')


@pytest.fixture
def inputs_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(binlog dir, ledger dir, the temporary directory prepare_inputs stages in, empty)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    binlogs = tmp_path / "binlogs"
    shutil.copytree(oracle_dir(), binlogs)
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    (ledger / "ledger.000001.jsonl").write_bytes(CONN)
    return binlogs, ledger, tmp


def test_the_inputs_are_staged_where_a_failure_would_leave_them(inputs_dirs: tuple[Path, Path, Path]) -> None:
    """The cases below can fail: staging (driver_bytes 0) makes both directories in the temporary directory."""
    binlogs, ledger, tmp = inputs_dirs
    inputs = audit.prepare_inputs(binlogs, ledger, driver_bytes=0)
    assert inputs.staged is not None and inputs.staged_ledger is not None and inputs.probes is not None
    assert {p.parent for p in (inputs.staged.path, inputs.staged_ledger)} == {tmp}
    inputs.remove_staged()
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("step", ["stage_events", "probe_ledger"])
def test_a_step_failing_after_its_work_leaves_no_staged_directory(inputs_dirs: tuple[Path, Path, Path],
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   step: str) -> None:
    binlogs, ledger, tmp = inputs_dirs
    real = getattr(audit, step)

    def failing(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # its files written, then the failure
        raise OSError("No space left on device")

    monkeypatch.setattr(audit, step, failing)
    with pytest.raises(OSError, match="No space left"):
        audit.prepare_inputs(binlogs, ledger, driver_bytes=0)
    assert list(tmp.iterdir()) == []


def test_the_ledger_failing_to_be_written_leaves_no_staged_directory(inputs_dirs: tuple[Path, Path, Path],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    binlogs, ledger, tmp = inputs_dirs
    real = pq.write_table

    def failing(table: Any, where: Any, **kwargs: Any) -> None:
        real(table, where, **kwargs)
        raise OSError("No space left on device")

    monkeypatch.setattr(pq, "write_table", failing)
    with pytest.raises(OSError, match="No space left"):
        audit.prepare_inputs(binlogs, ledger, driver_bytes=0)
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("lines", [[b"null", CONN], [CONN, b"null"], [CONN, b"1"], [CONN, b'"text"'],
                                   [CONN, b"[" + CONN.strip() + b"]"]])
@pytest.mark.parametrize("native", [True, False])
def test_a_line_that_is_not_an_object_is_left_to_spark(tmp_path: Path, lines: list[bytes], native: bool) -> None:
    """`ledger.strict_tables` gives None (Spark reads the JSON) with the C scanner and with pyarrow alone; in a
    process of its own: the failure this guards against is a crash (pyarrow 26, a first line `null`)."""
    (tmp_path / "ledger.000001.jsonl").write_bytes(b"".join(line.rstrip(b"\n") + b"\n" for line in lines))
    code = ("import sys; from binlogd.spark_analytics.ledger import ledger_files, strict_tables; "
            "print(strict_tables(ledger_files(sys.argv[1])))")
    env = {k: v for k, v in os.environ.items() if k != "BINLOGD_NO_NATIVE"}
    if not native:
        env["BINLOGD_NO_NATIVE"] = "1"
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert (r.returncode, r.stdout.strip()) == (0, "None"), r.stderr[-2000:]
