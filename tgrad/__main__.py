"""``python -m tgrad demo|info``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tgrad", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train a small MLP classifier and print the loss")
    demo.add_argument("--steps", type=int, default=300)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--device", default=None)
    sub.add_parser("info", help="versions, devices and backend status")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from tgrad.demo import run_demo
        run_demo(steps=args.steps, seed=args.seed, device=args.device)
    elif args.command == "info":
        from tgrad.info import print_info
        print_info()
    return 0


if __name__ == "__main__":
    sys.exit(main())
