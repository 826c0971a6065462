"""What a driver hands to executors on other machines (issue 21): no file of the driver's
temporary directory as their interpreter, and the user's modules by value."""

import subprocess
import sys
import tempfile

from pyspark import cloudpickle

from kspark.spark._kafka_streams import _pickleUserModulesByValue
from kspark.spark._session import workerPythonFor


def test_a_cluster_master_runs_workers_on_this_interpreters_own_path():
    """The launcher of local runs lives in this machine's temp directory: executors elsewhere
    would fail every task with "Cannot run program"."""
    assert workerPythonFor("spark://10.0.0.1:7077") == sys.executable
    assert workerPythonFor("yarn") == sys.executable
    for master in ("local", "local[2]", "local-cluster[2,1,1024]"):
        chosen = workerPythonFor(master)  # the launcher, or this interpreter where it cannot be written
        assert chosen == sys.executable or chosen.startswith(tempfile.gettempdir())


def test_a_user_module_named_like_kspark_is_shipped_by_value(tmp_path, monkeypatch):
    """Only kspark's own modules are left to the executors' installation: a user module whose
    name merely starts with "kspark" travels with the topology."""
    (tmp_path / "kspark_userjob.py").write_text("def double(x):\n    return 2 * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import kspark_userjob

    try:
        _pickleUserModulesByValue()
        payload = cloudpickle.dumps(kspark_userjob.double)
    finally:
        try:
            cloudpickle.unregister_pickle_by_value(kspark_userjob)
        except ValueError:  # it was not registered
            pass
        sys.modules.pop("kspark_userjob")
    # another interpreter without tmp_path on its path, as an executor on another machine
    run = subprocess.run([sys.executable, "-c", "import pickle, sys; print(pickle.loads(sys.stdin.buffer.read())(21))"],
                         input=payload, capture_output=True, cwd="/")
    assert run.stdout.strip() == b"42", run.stderr.decode()
