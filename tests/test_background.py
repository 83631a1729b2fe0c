"""tests/background.py: the jobs the slow checks run beside the suite (on a Jobs of its own,
not the session's)."""

import sys

import pytest
from background import Jobs

PY = sys.executable


def test_result_waits_and_keeps_the_whole_output():
    jobs = Jobs()
    # more output than a pipe holds: a job writing it never blocks, nobody reading
    jobs.start("big", [PY, "-c", "import sys; print('x' * 300000); sys.exit(3)"])
    jobs.start("big", [PY, "-c", "raise SystemExit(9)"])  # the name is taken: not started
    r = jobs.result("big")
    assert (r.returncode, len(r.stdout)) == (3, 300001)
    assert jobs.result("big").stdout == r.stdout  # read again


def test_start_after_runs_once_its_dependencies_exit(tmp_path):
    jobs = Jobs()
    mark = tmp_path / "mark"
    jobs.start("writer", [PY, "-c", f"import time; time.sleep(0.3); open({str(mark)!r}, 'w')"
                                    ".write('done')"])
    # make() runs after the writer exits, so the file is there to name on the command line
    jobs.start_after("reader", ["writer"], lambda: (
        [PY, "-c", f"print(open({str(mark)!r}).read(), {mark.exists()!r})"], {}))
    assert jobs.result("reader").stdout.split() == ["done", "True"]

    def bad():
        raise ValueError("no specs")
    jobs.start_after("broken", ["writer"], bad)
    with pytest.raises(ValueError, match="no specs"):
        jobs.result("broken")


def test_stop_all_kills_running_jobs_and_starts_no_waiting_one():
    jobs = Jobs()
    jobs.start("sleeper", [PY, "-c", "import time; time.sleep(60)"])
    made = []
    jobs.start_after("after", ["sleeper"], lambda: made.append(1) or ([PY, "-c", ""], {}))
    jobs.stop_all()
    assert jobs.result("sleeper").returncode != 0  # killed, not slept out
    assert made == []
    with pytest.raises(KeyError):
        jobs.result("after")
