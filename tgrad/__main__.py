"""tgrad's command line: ``python -m tgrad demo`` (the main job), ``info`` and ``bench``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tgrad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train a small MLP classifier, then profile it")
    demo.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    demo.add_argument("--hidden", type=int, default=64, help="hidden width (default 64)")
    demo.add_argument("--points", type=int, default=200,
                      help="points per spiral (default 200)")
    demo.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--device", default=None,
                      help="cpu or cuda (default: the best available device)")
    demo.add_argument("--profile-steps", type=int, default=5,
                      help="profile the last N steps (default 5)")
    demo.add_argument("--trace", default=None,
                      help="Chrome trace path (default: tgrad_demo_trace.json in the temp dir)")
    sub.add_parser("info", help="versions, devices and backend status")
    bench = sub.add_parser("bench", help="time ops forward+backward (cpu: vs raw NumPy)")
    from tgrad.bench import add_arguments
    add_arguments(bench)  # --device --ops --sizes --dtype --out --compare --budget
    args = parser.parse_args(argv)
    if args.command == "bench":
        from tgrad.bench import main as bench_main
        return bench_main(args)
    if args.command == "demo":
        from tgrad.demo import run_demo
        if args.device is not None:
            _check_device(parser, args.device)
        run_demo(steps=args.steps, seed=args.seed, device=args.device, hidden=args.hidden,
                 n_per_class=args.points, lr=args.lr, profile_steps=args.profile_steps,
                 trace_path=args.trace)
        return 0
    from tgrad.info import print_info
    print_info()
    return 0


def _check_device(parser: argparse.ArgumentParser, name: str) -> None:
    """Fail with a one-line usage error for an unknown or unavailable device."""
    from tgrad.device import as_device
    try:
        dev = as_device(name)
    except RuntimeError as e:
        parser.error(f"--device {name}: {e}")
    if dev.type == "cuda":
        from tgrad.info import gpu_status
        works, why = gpu_status()
        if not works:
            parser.error(f"--device {name}: the GPU backend does not work here: {why}")


if __name__ == "__main__":
    sys.exit(main())
