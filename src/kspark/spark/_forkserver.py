"""A fork server for the Python processes Spark starts on this machine (local masters).

Before a query's first task runs, Spark starts its Python helpers one after the other, each a
new interpreter (``python -m pyspark.daemon pyspark.sql.worker.lookup_data_sources``,
``create_data_source``, the streaming source runner, the ``transformWithState`` driver worker,
the read planner, the writer, the task workers' daemon, the sink's commit runner): each spends
0.2-0.8 s starting Python and importing pyspark, pandas, pyarrow and kspark before it does its
work, and the query waits for each in turn.

The server imports those modules once, at session start, while the JVM starts. The worker
launcher (``kspark.spark._session._workerPython``) hands every ``python -m <module> ...`` to it
through :data:`CLIENT`: a small interpreter without ``site`` that passes its argv, working
directory, environment, ignored signals and its stdin, stdout and stderr (``SCM_RIGHTS``) to
the server, which forks a child that becomes that process: a process group of its own, those
file descriptors, directory, environment, ignored signals, ``sys.argv`` and ``sys.path`` (the
server's own path with the client's ``PYTHONPATH`` entries first); it runs the module as
``__main__`` (``runpy``), then its exit handlers, and exits with its status, which the client
exits with. Signals sent to the client (the JVM's ``Process.destroy``: SIGTERM) go to the
child; a client that dies (SIGKILL: ``destroyForcibly``) takes the child with it.

The client runs the process itself instead (``exec`` of the launcher without the server) when
the server cannot give the same process: no server, the call is not ``-m``, a variable CPython
reads at start (:data:`STARTUP_VARIABLES`: hash seed, buffering, flags, locale) differs from
the server's, a ``PYTHONPATH`` entry holds a package the server already imported from
elsewhere (e.g. a kspark zip from ``--py-files``), or the server is gone.

The server ends when the process that started it ends (its end of a pipe closes).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import struct
import sys

# Modules every helper imports; a failed import is left to the helper, which imports what it needs.
PRELOAD = (
    "pandas", "pyarrow", "pyspark.daemon", "pyspark.worker", "pyspark.sql.pandas.serializers",
    "pyspark.sql.worker.lookup_data_sources", "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.plan_data_source_read", "pyspark.sql.worker.write_into_data_source",
    "pyspark.sql.worker.commit_data_source_write", "pyspark.sql.worker.python_streaming_sink_runner",
    "pyspark.sql.streaming.python_streaming_source_runner",
    "pyspark.sql.streaming.transform_with_state_driver_worker",
    "pyspark.sql.streaming.stateful_processor_api_client",
    "kspark.spark._datasource", "kspark.spark._task_processor", "kspark.dsl",
)

# Signals a client forwards to its child, unless it ignores them; the child then ignores them
# too (the JVM ignores SIGINT, and so do the processes it starts).
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")

# What CPython reads at start (the environment variables of its documentation, and the locale),
# PYTHONPATH aside: a child forked from the server has the server's values of these.
STARTUP_VARIABLES = (
    "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONOPTIMIZE", "PYTHONDEBUG", "PYTHONINSPECT",
    "PYTHONUNBUFFERED", "PYTHONVERBOSE", "PYTHONCASEOK", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX",
    "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONNOUSERSITE", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
    "PYTHONWARNINGS", "PYTHONFAULTHANDLER", "PYTHONTRACEMALLOC", "PYTHONPROFILEIMPORTTIME", "PYTHONMALLOC",
    "PYTHONMALLOCSTATS", "PYTHONCOERCECLOCALE", "PYTHONDEVMODE", "PYTHONUTF8", "PYTHONWARNDEFAULTENCODING",
    "PYTHONNODEBUGRANGES", "PYTHONINTMAXSTRDIGITS", "PYTHONTHREADDEBUG", "PYTHONDUMPREFS", "PYTHONPERFSUPPORT",
    "LC_ALL", "LC_CTYPE", "LANG",
)

_HEADER = struct.Struct(">I")

CLIENT = r'''
import array, json, os, signal, socket, struct, sys
launcher, path = sys.argv[1], os.environ.pop("KSPARK_FORK_SERVER", None)
argv = sys.argv[2:]
def fallback():
    os.execv(launcher, [launcher] + argv)
if not path or len(argv) < 2 or argv[0] != "-m":
    fallback()
ignored = [n for n in %(forwarded)r if signal.getsignal(getattr(signal, n)) == signal.SIG_IGN]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(path)
    body = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "ignored": ignored}).encode()
    s.sendmsg([struct.pack(">I", len(body)), body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]))])
    reply = s.recv(9, socket.MSG_WAITALL)
except OSError:
    fallback()
if len(reply) != 9 or reply[:1] != b"P":
    fallback()
child = struct.unpack(">q", reply[1:])[0]
def forward(signum, frame):
    try:
        os.kill(child, signum)
    except OSError:
        pass
for n in %(forwarded)r:
    if n not in ignored:
        signal.signal(getattr(signal, n), forward)
data = s.recv(5, socket.MSG_WAITALL)
code = struct.unpack(">i", data[1:])[0] if len(data) == 5 else 1
if code < 0:  # killed by a signal: so is the client, as the JVM sees it
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code)
''' % {"forwarded": FORWARDED}
"""``python -I -S -c`` code of the launcher's client: ``sys.argv[1]`` is the launcher, which it
runs without ``KSPARK_FORK_SERVER`` when the server cannot serve, then the arguments Spark gave
(see the module docstring). The forked child gets the environment without ``KSPARK_FORK_SERVER``
too."""


def _startupEnv(env: dict) -> dict:
    """The values of ``STARTUP_VARIABLES`` in ``env``."""
    return {k: env[k] for k in STARTUP_VARIABLES if k in env}


def _shadows(entries: list[str], names: set[str]) -> bool:
    """Whether a ``PYTHONPATH`` entry (directory or zip) holds one of the top-level ``names``."""
    import zipfile

    for entry in entries:
        if os.path.isdir(entry):
            if any(os.path.exists(os.path.join(entry, n)) or os.path.exists(os.path.join(entry, n + ".py"))
                   for n in names):
                return True
        elif os.path.isfile(entry):
            try:
                with zipfile.ZipFile(entry) as z:
                    tops = {name.split("/", 1)[0].removesuffix(".py") for name in z.namelist()}
            except (OSError, zipfile.BadZipFile):
                continue
            if tops & names:
                return True
    return False


class _Server:
    def __init__(self, path: str, parentFd: int) -> None:
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.parentFd = parentFd
        self.env = _startupEnv(os.environ)
        self.basePath = list(sys.path)
        self.ownEntries = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        self.clients: dict[int, tuple[socket.socket, int]] = {}  # pidfd -> (client connection, child pid)
        self.byConn: dict[socket.socket, int] = {}  # client connection -> pidfd
        self.verdicts: dict[str, bool] = {}  # PYTHONPATH -> whether it shadows a preloaded package

    def preload(self) -> None:
        import gc
        import importlib

        for name in PRELOAD:
            try:
                importlib.import_module(name)
            except Exception:
                pass
        self.loaded = {name.split(".")[0] for name in list(sys.modules) if not name.startswith("_")}
        self.loaded -= set(sys.builtin_module_names) | set(getattr(sys, "stdlib_module_names", ()))
        gc.collect()
        gc.freeze()  # children do not write to these objects' pages when they collect

    def serve(self) -> None:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ, "accept")
        sel.register(self.parentFd, selectors.EVENT_READ, "parent")
        self.selector = sel
        while True:
            for key, _ in sel.select():
                kind = key.data
                if kind == "parent":
                    return
                if kind == "accept":
                    try:
                        conn, _ = self.listener.accept()
                    except OSError:
                        continue
                    self._start(conn)
                elif kind == "child":
                    self._reap(key.fd)
                else:  # a client's connection: readable only when the client is gone
                    self._clientGone(key.fileobj)

    def _start(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            conn.settimeout(10)
            request, fds = self._receive(conn)
            conn.settimeout(None)
            if not self._canServe(request):
                conn.sendall(b"F" + bytes(8))
                conn.close()
                for fd in fds:
                    os.close(fd)
                return
            pid = os.fork()
            if pid == 0:
                self._becomeChild(conn, request, fds)  # never returns
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            conn.sendall(b"P" + struct.pack(">q", pid))
        except Exception:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            conn.close()
            return
        self.clients[pidfd] = (conn, pid)
        self.byConn[conn] = pidfd
        self.selector.register(pidfd, 1, "child")
        self.selector.register(conn, 1, "conn")

    @staticmethod
    def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
        fds = array.array("i")
        data, ancillary, _, _ = conn.recvmsg(_HEADER.size, socket.CMSG_SPACE(3 * fds.itemsize))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        if len(data) < _HEADER.size:
            data += conn.recv(_HEADER.size - len(data), socket.MSG_WAITALL)
        (size,) = _HEADER.unpack(data)
        body = conn.recv(size, socket.MSG_WAITALL)
        if len(fds) != 3 or len(body) != size:
            raise OSError("incomplete request")
        return json.loads(body), list(fds)

    def _canServe(self, request: dict) -> bool:
        env = request["env"]
        if _startupEnv(env) != self.env:
            return False
        pythonPath = env.get("PYTHONPATH", "")
        verdict = self.verdicts.get(pythonPath)
        if verdict is None:
            extra = [e for e in pythonPath.split(os.pathsep) if e and e not in self.ownEntries and e not in self.basePath]
            verdict = self.verdicts[pythonPath] = not _shadows(extra, self.loaded)
        return verdict

    def _reap(self, pidfd: int) -> None:
        conn, pid = self.clients.pop(pidfd)
        if self.byConn.pop(conn, None) is not None:  # else unregistered by _clientGone
            self.selector.unregister(conn)
        self.selector.unregister(pidfd)
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        try:
            conn.sendall(b"X" + struct.pack(">i", os.waitstatus_to_exitcode(status)))
        except OSError:
            pass
        conn.close()

    def _clientGone(self, conn: socket.socket) -> None:
        pidfd = self.byConn.pop(conn)
        self.selector.unregister(conn)
        _, pid = self.clients[pidfd]
        try:
            os.kill(pid, signal.SIGKILL)  # the child's status is collected by _reap
        except OSError:
            pass

    def _becomeChild(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        code = 1
        try:
            conn.close()
            self.selector.close()
            self.listener.close()
            os.close(self.parentFd)
            for pidfd, (other, _) in self.clients.items():
                os.close(pidfd)
                other.close()
            os.setpgid(0, 0)  # a group of its own, in the server's session: no terminal's signals
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            for name in FORWARDED:
                signum = getattr(signal, name)
                if name in request["ignored"]:
                    signal.signal(signum, signal.SIG_IGN)
                else:
                    signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            cwd = os.getcwd()
            given = [e for e in request["env"].get("PYTHONPATH", "").split(os.pathsep) if e]
            base = [e for e in self.basePath[1:] if e not in self.ownEntries]
            sys.path[:] = [cwd] + [os.path.abspath(e) for e in given] + base
            argv = request["argv"]
            sys.argv[:] = [argv[0]] + argv[2:]
            import runpy

            # run as ``python -m`` runs it: a fresh module, not the one the server imported
            sys.modules.pop(argv[1], None)
            try:
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as e:  # as the interpreter exits on it
                code = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
                if code == 1 and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
            except BaseException:
                import traceback

                traceback.print_exc()
                code = 1
            import threading

            getattr(threading, "_shutdown", lambda: None)()
            import atexit

            atexit._run_exitfuncs()
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)


_started: str | None = None


def startForkServer() -> str | None:
    """Start this process's fork server (once) and set ``KSPARK_FORK_SERVER`` to its socket, so
    that a JVM started afterwards passes it to the processes it starts; return the socket's
    path, or None if the server could not start (the launcher then runs every process itself).

    The server gets this process's environment with the values Spark gives its Python processes
    (``PYTHONHASHSEED`` this process's or ``0``, ``PYTHONUNBUFFERED=YES``) and ends when this
    process ends."""
    global _started
    if _started is None:
        env = dict(os.environ, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"), PYTHONUNBUFFERED="YES")
        try:
            _, path, stop = launch(env)
        except OSError:
            return None
        import atexit

        atexit.register(stop)
        os.environ["KSPARK_FORK_SERVER"] = _started = path
    return _started


def launch(env: dict):
    """Start a fork server with ``env``; return its process (``subprocess.Popen``), its socket's
    path and a function that stops it (the server ends when its pipe from this process closes)."""
    import shutil
    import subprocess
    import tempfile

    directory = tempfile.mkdtemp(prefix="kspark-fork-")  # mode 0700: this user's processes only
    path = os.path.join(directory, "server")
    env = {k: v for k, v in env.items() if k != "KSPARK_FORK_SERVER"}
    readEnd, writeEnd = os.pipe()
    try:
        process = subprocess.Popen([sys.executable, "-m", "kspark.spark._forkserver", path, str(readEnd)],
                                   pass_fds=(readEnd,), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   start_new_session=True)
    except OSError:
        os.close(writeEnd)
        shutil.rmtree(directory, ignore_errors=True)
        raise
    finally:
        os.close(readEnd)

    def stop() -> None:
        try:
            os.close(writeEnd)
        except OSError:
            pass
        shutil.rmtree(directory, ignore_errors=True)

    return process, path, stop


def main() -> None:
    path, parentFd = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the starting process's Ctrl-C; it ends with its pipe
    server = _Server(path, parentFd)
    server.preload()
    try:
        server.serve()
    finally:  # the socket and its directory (launch's stop() is not run if the starting process was killed)
        try:
            os.unlink(path)
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass


if __name__ == "__main__":
    main()
