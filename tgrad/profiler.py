"""tgrad.profiler: PyTorch's ``torch.profiler`` API over tgrad's autograd profiler.

    with tgrad.profiler.profile(schedule=tgrad.profiler.schedule(wait=1, warmup=1, active=2),
                                on_trace_ready=tgrad.profiler.tensorboard_trace_handler("log"),
                                ) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Each recording window (a run of RECORD / RECORD_AND_SAVE steps) is one
``tgrad.autograd.profiler.profile``; the state machine below is torch's
(``torch.profiler.profile.action_map``), so a schedule gives the same windows, the same
``on_trace_ready`` calls and the same warnings as in PyTorch. See docs/profiler.md.
"""

from __future__ import annotations

import enum
import gzip
import inspect
import os
import shutil
import socket
import tempfile
import time
import warnings
from functools import partial
from typing import Any, Callable, Iterable

from tgrad.autograd.profiler import profile as _autograd_profile
from tgrad.autograd.profiler import record_function
from tgrad.autograd.profiler.device import _cuda_available
from tgrad.autograd.profiler.events import EventList

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler",
           "ProfilerAction", "ProfilerActivity", "record_function"]


class ProfilerActivity(enum.Enum):
    """Activity groups (torch's values). tgrad records CPU ranges, and device times for
    those ranges when ``CUDA`` is asked for and tgrad.cuda is available."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    """What the profiler does during a step (the value a ``schedule`` returns)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4  # torch sets it internally (device buffer overflow); never tgrad's


# Enum classes are called with one value; say so (Enum's own signature differs across
# Python versions, and docs/api.md must not).
_VALUE_SIGNATURE = inspect.Signature(
    [inspect.Parameter("value", inspect.Parameter.POSITIONAL_OR_KEYWORD)])
ProfilerActivity.__signature__ = ProfilerAction.__signature__ = _VALUE_SIGNATURE


def supported_activities() -> set[ProfilerActivity]:
    """CPU, plus CUDA when tgrad.cuda has a device (a GPU or TRITON_INTERPRET=1)."""
    acts = {ProfilerActivity.CPU}
    if _cuda_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """torch.profiler.schedule: skip ``skip_first`` steps, then cycles of ``wait`` NONE,
    ``warmup`` WARMUP and ``active`` recording steps (the last one RECORD_AND_SAVE);
    ``repeat`` cycles (0: until the profile ends). ``skip_first_wait`` != 0 drops the first
    cycle's wait. Step -> action, with k = step - skip_first (+ wait if skip_first_wait),
    n = wait + warmup + active and m = k % n:
    NONE if step < skip_first or (repeat and k / n >= repeat) or m < wait;
    WARMUP if m < wait + warmup; RECORD if m < n - 1; else RECORD_AND_SAVE."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup="
            f"{warmup} (need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:  # the first cycle starts at its warmup
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    """Without a schedule the profile records from start() to stop()."""
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[profile], None]:
    """An ``on_trace_ready`` handler writing each cycle's Chrome trace to
    ``dir_name/{worker_name}.{time.time_ns()}.pt.trace.json`` (``.gz`` with use_gzip);
    ``worker_name`` defaults to ``{hostname}_{pid}``, as in PyTorch."""

    def handler_fn(prof: profile) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"  # ns: no name clashes
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


_WARNED: set = set()


def _warn_once(msg: str) -> None:
    if msg not in _WARNED:
        _WARNED.add(msg)
        warnings.warn(msg, stacklevel=3)


def _parse_activities(activities: Iterable) -> set[ProfilerActivity]:
    """torch's rules: each item a ProfilerActivity or a {activity: [type names]} dict (tgrad
    records every type of a group), no group twice."""
    acts: set[ProfilerActivity] = set()
    for item in activities:
        keys = list(item) if isinstance(item, dict) else [item]
        if not isinstance(item, (dict, ProfilerActivity)):
            raise TypeError(f"Expected ProfilerActivity or dict, got {type(item)}")
        for key in keys:
            if not isinstance(key, ProfilerActivity):
                raise TypeError(f"Expected ProfilerActivity or dict, got {type(key)}")
            if key in acts:
                raise ValueError(f"Activity {key} specified more than once")
            acts.add(key)
    return acts


def _merge(acc: EventList, new: EventList, shift_us: float) -> None:
    """acc_events: append a later cycle's events to ``acc``, moved onto the first cycle's
    time axis (``shift_us`` = its start minus the first cycle's start) with fresh ids."""
    base = len(acc)
    for e in new:
        e.id += base
        s, t = e.cpu_interval
        e.cpu_interval = (s + shift_us, t + shift_us)
        if e.cuda_interval is not None:
            s, t = e.cuda_interval
            e.cuda_interval = (s + shift_us, t + shift_us)
        acc.append(e)


class profile:
    """torch.profiler.profile: records op forwards, backward nodes, engine runs and
    ``record_function`` ranges during the steps its ``schedule`` marks RECORD /
    RECORD_AND_SAVE (every step without a schedule), and calls ``on_trace_ready(self)``
    at the end of each recording cycle (and at stop() if a cycle is open).

    tgrad records per-op device times (``activities`` with ``CUDA``), input shapes
    (``record_shapes``) and bytes / FLOPs (``with_flops``). It does not track memory per
    op, Python stacks or modules: ``profile_memory``, ``with_stack`` and ``with_modules``
    are accepted and add nothing (the memory and stack columns are absent).
    ``execution_trace_observer`` gets start() / stop() around each recording window and
    cleanup() at exit; ``experimental_config``, ``custom_trace_id_callback`` and
    ``post_processing_timeout_s`` are accepted and ignored. Only the thread that starts the
    profile is recorded (PyTorch's profiler is thread-local too).
    """

    def __init__(self, *, activities: Iterable | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[..., Any] | None = None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None,
                 execution_trace_observer: Any = None, acc_events: bool = False,
                 use_cuda: bool | None = None,
                 custom_trace_id_callback: Callable[[], str] | None = None,
                 post_processing_timeout_s: float | None = None) -> None:
        if activities is not None:
            activities = list(activities)
            if not any(isinstance(a, (ProfilerActivity, dict)) for a in activities):
                raise AssertionError("No valid profiler activities found")
            acts = _parse_activities(activities)
        else:
            acts = supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead",
                          FutureWarning, stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if not acts:
            raise AssertionError("No valid profiler activities found")
        self.activities = acts
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = execution_trace_observer
        self.acc_events = acc_events
        self.profiler: _autograd_profile | None = None  # the current / last window
        self._acc: EventList | None = None  # acc_events: every finished window's events
        self._acc_t0: int | None = None
        if schedule is not None:
            self.schedule = schedule
            self.record_steps = True  # a "ProfilerStep#N" range around each step
        else:
            self.schedule = _default_schedule_fn
            self.record_steps = False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn: record_function | None = None
        self._running = False
        self.current_action = self._checked_action(self.step_num)
        A = ProfilerAction  # noqa: N806  (short: the table below)
        incorrect = "Incorrect schedule: {} followed by {}"
        # (previous action, current action) -> what to do; None: stop() (torch's table,
        # without DEVICE_STOPPED, which tgrad never enters).
        self.action_map: dict = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [partial(warnings.warn, incorrect.format("WARMUP", "NONE")),
                                 self.start_trace, self.stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [partial(warnings.warn, incorrect.format("RECORD", "NONE")),
                                 self.stop_trace],
            (A.RECORD, A.WARMUP): [partial(warnings.warn,
                                           incorrect.format("RECORD", "WARMUP")),
                                   self.stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self.stop_trace, self._trace_ready,
                                            self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self.stop_trace, self._trace_ready,
                                                     self.prepare_trace, self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): [self.stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def _checked_action(self, step: int) -> ProfilerAction:
        action = self.schedule(step)
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the "
                             "profiler and must not be returned by a user-provided schedule")
        if not isinstance(action, ProfilerAction):
            raise TypeError(f"profile: the schedule returned {action!r} for step {step}; "
                            "it must return a tgrad.profiler.ProfilerAction")
        return action

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.stop()
        if self.execution_trace_observer is not None:
            self.execution_trace_observer.cleanup()

    def start(self) -> None:
        if self._running:  # PyTorch carries on; a second recording would clash with the first
            warnings.warn("profile.start(): the profiler is already running; the call is "
                          "ignored", stacklevel=2)
            return
        self._running = True
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        self._running = False
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signals the profiler that the next profiling step has started."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev_action = self.current_action
        action = self._checked_action(self.step_num + 1)  # checked before any change
        self.step_num += 1
        self.current_action = action
        self._transit_action(prev_action, action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _transit_action(self, prev_action, current_action) -> None:
        for action in self.action_map.get((prev_action, current_action), ()):
            action()

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def prepare_trace(self) -> None:
        """A fresh recording window (the previous window's events are dropped unless
        acc_events=True, with torch's one-time warning)."""
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only "
                       "events from the current cycle will be reported. To keep events "
                       "across cycles, set acc_events=True.")
        self.profiler = _autograd_profile(
            use_cuda=self._use_cuda(), record_shapes=self.record_shapes,
            with_flops=self.with_flops)

    def _use_cuda(self) -> bool:
        """CUDA asked for and available; unavailable device groups warn as in torch."""
        available = supported_activities()
        for act in sorted(self.activities - available, key=lambda a: a.value):
            warnings.warn(f"{act.name} is not available, disabling {act.name} profiling",
                          stacklevel=4)
        if not (self.activities & available):
            raise AssertionError("No activities specified for the profiler")
        return ProfilerActivity.CUDA in self.activities & available

    def start_trace(self) -> None:
        if self.execution_trace_observer is not None:
            self.execution_trace_observer.start()
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler.__enter__()
        if self._acc_t0 is None or not self.acc_events:
            self._acc_t0 = self.profiler._t0

    def stop_trace(self) -> None:
        if self.execution_trace_observer is not None:
            self.execution_trace_observer.stop()
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler.__exit__(None, None, None)
        if self.acc_events:
            events = self.profiler.function_events
            if self._acc is None:
                self._acc = EventList([], events._peak_gbps, events._timer)
            _merge(self._acc, events, (self.profiler._t0 - self._acc_t0) / 1e3)
            self.profiler.function_events = self._acc

    # ------------------------------------------------------------------ results
    def _finished(self, what: str) -> _autograd_profile:
        if self.profiler is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return self.profiler

    def events(self) -> EventList:
        """The FunctionEvents of the last recording window (all windows with
        acc_events=True)."""
        return self._finished("accessing events").events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events averaged by name (and input shapes). tgrad records no stacks or overload
        names, so ``group_by_stack_n`` and ``group_by_overload_name`` change nothing."""
        return self._finished("getting key averages").key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Chrome trace JSON of the last window (gzipped when ``path`` ends in .gz;
        ``use_python_export`` changes nothing: tgrad's export is Python's)."""
        prof = self._finished("exporting chrome trace")
        if not path.endswith(".gz"):
            prof.export_chrome_trace(path)
            return
        with tempfile.TemporaryDirectory() as tmp:
            raw = os.path.join(tmp, "trace.json")
            prof.export_chrome_trace(raw)
            with open(raw, "rb") as fin, gzip.open(path, "wb") as fout:
                shutil.copyfileobj(fin, fout)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Stacks in the collapsed format of flame graphs. tgrad records no Python stacks,
        so the file is empty (as torch's is for events without stacks)."""
        if metric not in ("self_cpu_time_total", "self_cuda_time_total"):
            raise ValueError("metric should be one of: ['self_cpu_time_total', "
                             "'self_cuda_time_total']")
        self._finished("exporting stacks")
        with open(path, "w"):
            pass

    def __str__(self) -> str:
        return "<tgrad.profiler.profile (not run)>" if self.profiler is None \
            else str(self.profiler)
