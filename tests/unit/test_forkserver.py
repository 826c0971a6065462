"""The fork server behind the local worker launcher (kspark.spark._forkserver): a process Spark
starts through it is the process it would have started, argv, directory, environment, standard
streams, exit status and signals included; where it cannot be, the launcher runs it itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from kspark.spark import _forkserver
from kspark.spark._session import _workerPython

PROBE = '''
import json, os, signal, sys
if sys.argv[1:2] == ["wait"]:
    signal.signal(signal.SIGTERM, lambda *a: (print("got SIGTERM", flush=True), os._exit(7)))
    print(os.getpid(), os.getppid(), flush=True)
    signal.pause()
data = sys.stdin.read()
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "path": sys.path[:2], "name": __name__, "stdin": data,
                  "env": {k: v for k, v in os.environ.items() if k.startswith("PROBE")},
                  "server": "KSPARK_FORK_SERVER" in os.environ, "ppid": os.getppid(),
                  "sigint": signal.getsignal(signal.SIGINT) == signal.SIG_IGN}))
sys.stderr.write("to stderr\\n")
sys.exit(int(os.environ.get("PROBE_CODE", "0")))
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A fork server as a session starts one (PYTHONHASHSEED and PYTHONUNBUFFERED as Spark sets
    them for its Python processes), a launcher, and the environment Spark gives a process."""
    root = tmp_path_factory.mktemp("forkserver")
    (root / "probe_mod.py").write_text(PROBE)
    (root / "shadow" / "pandas").mkdir(parents=True)
    (root / "shadow" / "pandas" / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONUNBUFFERED="YES")
    process, path, stop = _forkserver.launch(env)
    launcher = _workerPython()
    assert launcher != sys.executable  # the installed pyspark: the launcher is in use
    deadline = time.time() + 60
    while not os.path.exists(path) and time.time() < deadline:
        time.sleep(0.05)
    yield process, launcher, root, dict(env, KSPARK_FORK_SERVER=path, PYTHONPATH=str(root), PROBE_X="x y")
    stop()
    process.wait(timeout=30)


def probe(launcher, root, env, *args, **kwargs):
    done = subprocess.run([launcher, "-m", "probe_mod", *args], input=b"from stdin", capture_output=True, env=env,
                          cwd=root, timeout=120, **kwargs)
    return done.returncode, json.loads(done.stdout), done.stderr


def test_a_process_forked_by_the_server_is_the_process_spark_asked_for(server):
    process, launcher, root, env = server
    code, forked, stderr = probe(launcher, root, dict(env, PROBE_CODE="3"), "a", "b c")
    direct = probe(launcher, root, {k: v for k, v in env.items() if k != "KSPARK_FORK_SERVER"} | {"PROBE_CODE": "3"},
                   "a", "b c")
    assert forked["ppid"] == process.pid  # forked by the server
    assert direct[1]["ppid"] == os.getpid()  # the launcher ran it itself
    assert code == direct[0] == 3 and stderr == direct[2] == b"to stderr\n"
    assert forked == {**direct[1], "ppid": process.pid}
    assert forked == {"argv": ["a", "b c"], "cwd": str(root), "path": [str(root), str(root)], "name": "__main__",
                      "stdin": "from stdin", "env": {"PROBE_X": "x y", "PROBE_CODE": "3"}, "server": False,
                      "ppid": process.pid, "sigint": False}


def test_the_launcher_runs_the_process_itself_where_a_fork_would_differ(server):
    process, launcher, root, env = server
    # a PYTHONPATH entry holding a package the server imported from elsewhere
    shadowed = probe(launcher, root, dict(env, PYTHONPATH=f"{root}:{root / 'shadow'}"))[1]
    # a variable the interpreter reads at start
    seeded = probe(launcher, root, dict(env, PYTHONHASHSEED="1"))[1]
    assert shadowed["ppid"] == seeded["ppid"] == os.getpid()
    assert shadowed["path"] == [str(root), str(root)]


def test_ignored_sigint_is_ignored_in_the_forked_process(server):
    process, launcher, root, env = server  # the JVM ignores SIGINT, and so do the processes it starts
    forked = probe(launcher, root, env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))[1]
    assert forked["ppid"] == process.pid and forked["sigint"] is True


def test_signals_to_the_launched_process_reach_the_forked_one(server):
    process, launcher, root, env = server

    def launched():
        client = subprocess.Popen([launcher, "-m", "probe_mod", "wait"], stdout=subprocess.PIPE, env=env, cwd=root)
        child, parent = map(int, client.stdout.readline().split())
        assert parent == process.pid  # forked by the server
        return client, child

    client, child = launched()
    client.terminate()  # Java's Process.destroy()
    assert client.wait(timeout=30) == 7
    assert client.stdout.read() == b"got SIGTERM\n"

    client, child = launched()
    client.kill()  # destroyForcibly(): the forked process dies with it
    assert client.wait(timeout=30) == -signal.SIGKILL
    deadline = time.time() + 30
    while _alive(child) and time.time() < deadline:
        time.sleep(0.05)
    assert not _alive(child)

    client, child = launched()
    os.kill(child, signal.SIGKILL)  # the forked process killed: the launched one reports the same signal
    assert client.wait(timeout=30) == -signal.SIGKILL


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_module_the_server_imported_runs_as_a_fresh_main_module(server):
    process, launcher, root, env = server  # as `python -m` runs it: no runpy warning about the imported copy
    command = [launcher, "-m", "pyspark.daemon", "pyspark.worker"]  # stdin at its end: the daemon stops
    forked = subprocess.run(command, capture_output=True, env=env, cwd=root, timeout=120, stdin=subprocess.DEVNULL)
    direct = subprocess.run(command, capture_output=True, env={k: v for k, v in env.items() if k != "KSPARK_FORK_SERVER"},
                            cwd=root, timeout=120, stdin=subprocess.DEVNULL)
    assert forked.returncode == direct.returncode == 1
    assert forked.stderr == direct.stderr == b""
    assert len(forked.stdout) == len(direct.stdout) == 4  # the port it listened on


def test_the_launcher_drops_spark_s_zips_of_the_installed_pyspark_and_py4j(tmp_path):
    import py4j
    import pyspark

    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    zips = [os.path.join(lib, "pyspark.zip"), os.path.join(lib, f"py4j-{py4j.__version__}-src.zip")]
    assert all(os.path.exists(z) for z in zips)
    env = {k: v for k, v in os.environ.items() if k != "KSPARK_FORK_SERVER"}
    env["PYTHONPATH"] = os.pathsep.join([zips[0], str(tmp_path), zips[1]])
    done = subprocess.run([_workerPython(), "-c", "import sys, py4j, pyspark; print(sys.path[1], py4j.__file__, pyspark.__file__)"],
                          capture_output=True, env=env, check=True, timeout=120)
    first, py4jFile, pysparkFile = done.stdout.decode().split()
    assert first == str(tmp_path)  # the zips are gone, the other entry stays
    assert py4jFile == py4j.__file__ and pysparkFile == pyspark.__file__  # the installed, compiled copies


def test_a_server_whose_starting_process_was_killed_ends_and_removes_its_directory(tmp_path):
    """A SIGKILLed driver runs no atexit hook: the server sees its pipe close and cleans up itself."""
    script = ("import os, sys, time\nfrom kspark.spark import _forkserver\n"
              "process, path, stop = _forkserver.launch(dict(os.environ))\n"
              "while not os.path.exists(path): time.sleep(0.05)\n"
              "print(path, process.pid, flush=True)\nos.kill(os.getpid(), 9)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                          env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    path, pid = done.stdout.decode().split()
    assert os.path.dirname(path).startswith(str(tmp_path))
    deadline = time.time() + 60
    while os.path.exists(os.path.dirname(path)) and time.time() < deadline:
        time.sleep(0.1)
    assert list(tmp_path.iterdir()) == []
    while time.time() < deadline:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the fork server {pid} still runs")
