"""The fork server: a forked process is what ``python ARGS`` would have been to whoever started
its client (arguments, environment, working directory, standard streams, exit status, the
signal that ended it, the process group), and a command leaves no process behind.

The servers here import nothing (one imports Hypothesis), so each test costs a Python start-up,
not torch's import."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

from tests import offered
import pytest

from simacc.harness.processes import forkclient, forkserver

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="no fork server here (Linux with fork only)")


@pytest.fixture
def server():
    started = forkserver.Server(())
    yield started
    started.close()


def run(server, *args, **kwargs):
    return subprocess.run(forkserver.command(list(args), server.address), capture_output=True, text=True, **kwargs)


def test_a_forked_process_runs_its_arguments_in_its_clients_folder_environment_and_streams(server, tmp_path):
    code = "import os, sys; print(sys.argv[1:], os.getcwd(), os.environ['ASKED']); print('err', file=sys.stderr); sys.exit(3)"
    done = run(server, "-c", code, "a", "b", cwd=tmp_path, env={**os.environ, "ASKED": "yes"})
    assert (done.returncode, done.stdout, done.stderr) == (3, f"['a', 'b'] {tmp_path} yes\n", "err\n")


def test_a_module_runs_as_main_with_the_working_folder_first_on_its_path(server, tmp_path):
    (tmp_path / "here.py").write_text("import sys\nif __name__ == '__main__':\n    print(sys.path[0])\n")
    done = run(server, "-m", "here", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"{tmp_path}\n"), done.stderr


def test_a_server_holding_simaccs_modules_forks_only_for_its_own_sglang_settings():
    # simacc's contract reads SGLANG_* at import, as sglang does: a client with other settings
    # must import it anew, in a new interpreter (a stdlib-only module of simacc stands in for it)
    held = "simacc.harness.processes.atomic"
    started = forkserver.Server((held,))
    code = f"import os, sys; print(os.getppid(), {held!r} in sys.modules)"
    deadline = time.monotonic() + 60  # a client waits 5 s for a server to listen, then is python itself
    while not os.path.exists(started.address) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        same, other = (subprocess.run(forkserver.command(["-c", code], started.address), capture_output=True,
                                      text=True, env={**os.environ, **settings})
                       for settings in ({}, {"SGLANG_SIMULATE_ACC_METHOD": "x"}))
    finally:
        started.close()
    assert same.stdout == f"{started.process.pid} True\n", same.stderr  # forked by the server
    assert other.stdout.split()[1] == "False" and other.stdout.split()[0] != str(started.process.pid), other.stderr


def test_the_client_imports_none_of_the_standard_librarys_python_wrappers():
    """A client stands in for each process a command forks, some one after the other: with
    ``json``, ``socket`` and ``signal`` imported it took 50 ms to start instead of 10."""
    code = f"import sys; sys.path.insert(0, {str(forkserver.CLIENT.parent)!r}); import forkclient; print(*sys.modules)"
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "forkclient" in loaded
    assert not {"json", "socket", "signal", "subprocess", "struct", "enum", "re", "simacc"} & set(loaded), loaded


def test_processes_forked_from_a_server_that_made_numpys_generator_each_draw_their_own():
    """A server that imported ``numpy.random`` has made numpy's global generator: two copies that
    did not reseed it would draw the same numbers, where two new interpreters never do."""
    started = forkserver.Server(("numpy.random",))
    code = f"import os, sys, numpy; print(os.getppid(), {'numpy.random'!r} in sys.modules, numpy.random.randint(2**62))"
    try:
        first, second = (subprocess.run(forkserver.command(["-c", code], started.address), capture_output=True,
                                        text=True).stdout.split() for _ in range(2))
    finally:
        started.close()
    assert first[:2] == second[:2] == [str(started.process.pid), "True"], (first, second)  # both forked by it
    assert first[2] != second[2]


def test_a_server_scans_for_hypothesis_constants_once_and_leaves_each_process_its_own_hypothesis_folder(tmp_path):
    """The scan's cache would fix Hypothesis's folder in the server: a forked process still finds
    its own, from its own environment, as a new interpreter would."""
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):
        pytest.skip("this Hypothesis has no scan of local modules for constants")
    server = forkserver.Server(("hypothesis",))
    try:
        code = ("from hypothesis.configuration import storage_directory\n"
                "from hypothesis.internal.conjecture import providers\n"
                "print(providers._sys_modules_len is not None, storage_directory('x').path.parent)")
        done = run(server, "-c", code, env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path)})
    finally:
        server.close()
    assert (done.returncode, done.stdout) == (0, f"True {tmp_path}\n"), done.stderr


def test_a_process_that_ends_before_its_client_reads_its_pid_still_has_its_exit_code_read(tmp_path):
    """Its pid and its exit can arrive together: a client reading them with two buffered readers
    lost the second (exit 1 for a process that exited 3, once in a loaded suite run)."""
    address = str(tmp_path / "s")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(1)

    def serve():  # a server whose child ended at once: both lines in one write
        conn, _ = listener.accept()
        with conn:
            _, fds = forkserver._receive_request(conn)
            for fd in fds:
                os.close(fd)
            conn.sendall(forkclient.frame({"pid": 12345}) + forkclient.frame({"exit": 3}))

    thread = threading.Thread(target=serve)
    thread.start()
    forked = forkserver.request(address, ["-c", "pass"])
    thread.join()
    listener.close()
    assert (forked.pid, forked.wait(5)) == (12345, 3)


def test_the_client_ends_by_the_signal_that_ended_the_forked_process(server):
    done = run(server, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    assert done.returncode == -signal.SIGSEGV


def test_the_client_passes_sigterm_on_and_the_forked_process_joins_its_group(server, tmp_path):
    code = "import os, time; print(os.getpgrp(), os.getpid(), flush=True); time.sleep(60)"
    client = subprocess.Popen(forkserver.command(["-c", code], server.address), stdout=subprocess.PIPE, text=True,
                              preexec_fn=os.setpgrp)
    group, pid = map(int, client.stdout.readline().split())
    assert group == client.pid and pid != client.pid  # forked elsewhere, in the client's group
    client.terminate()
    assert client.wait(30) == -signal.SIGTERM
    assert _gone(pid)


def test_a_killed_client_takes_its_forked_process_with_it(server):
    client = subprocess.Popen(forkserver.command(["-c", "import os, time; print(os.getpid(), flush=True); "
                                                  "time.sleep(60)"], server.address), stdout=subprocess.PIPE, text=True)
    pid = int(client.stdout.readline())
    client.kill()
    client.wait(30)
    assert _gone(pid)


def test_without_a_server_the_client_becomes_python_itself(tmp_path):
    command = forkserver.command(["-c", "import sys; sys.exit(7)"], str(tmp_path / "nobody-listens"))
    start = time.monotonic()
    done = subprocess.run(command, env={**os.environ}, timeout=120)
    assert done.returncode == 7 and time.monotonic() - start < 60


def test_closing_the_server_ends_and_reaps_what_it_forked_and_what_they_left():
    server = forkserver.Server(())
    code = ("import os, subprocess, sys, time; orphan = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(0.5)']); print(os.getpid(), orphan.pid, flush=True); os._exit(0)")
    done = subprocess.run(forkserver.command(["-c", code], server.address), capture_output=True, text=True)
    forked, orphan = map(int, done.stdout.split())
    server.close()
    assert _gone(forked) and _gone(orphan)


def test_a_server_whose_starter_was_killed_ends_and_removes_its_folder(tmp_path):
    # the starter's SIGKILL leaves it no chance to remove the folder it made; the server's
    # standard input closes with it, and the server removes the folder as it ends
    code = ("import time; from simacc.harness.processes import forkserver; "
            "server = forkserver.Server(()); print(server.address, flush=True); time.sleep(60)")
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "TMPDIR": str(tmp_path)})
    folder = os.path.dirname(starter.stdout.readline().strip())
    deadline = time.monotonic() + 60
    while not os.listdir(folder) and time.monotonic() < deadline:  # the server listens
        time.sleep(0.02)
    starter.kill()
    starter.wait()
    deadline = time.monotonic() + 30
    while os.path.exists(folder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.listdir(tmp_path) == []


def test_a_check_leaves_no_process_behind(tmp_path):
    """Run as a program, a check ends its sessions, its workers, their zygotes and ranks, and its
    servers, each waited for: nothing of its group is left, running or ``<defunct>``."""
    own = {k: v for k, v in os.environ.items() if not k.startswith(forkserver.ADDRESS)}  # its own servers
    check = subprocess.Popen([sys.executable, "-m", "simacc", "check", "simacc:generate_simulated_accept_index",
                              "--property", "ranks_agree_given_the_same_inputs_and_seed", "--max-examples", "2",
                              "-q"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             preexec_fn=os.setpgrp, env=own)
    out, _ = check.communicate(timeout=300)
    assert check.returncode == 0, out
    assert offered.group(check.pid) == [], out


def _gone(pid, patience=10.0):
    """Whether process ``pid`` has ended and been reaped (no longer in /proc) within ``patience`` s."""
    deadline = time.monotonic() + patience
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(f"/proc/{pid}")
