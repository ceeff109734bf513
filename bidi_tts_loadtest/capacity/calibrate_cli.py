"""``python -m loadtest.capacity calibrate``: the command line of the timed-backend profile fit.

Measures a running container at one session (``--container-url``), or fits again from the
observations a profile kept (``--refit PROFILE``); the job itself is
:mod:`bidi_tts_loadtest.capacity.calibrate`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from bidi_tts.transports.base import TransportError
from bidi_tts_loadtest.capacity import calibrate
from bidi_tts_loadtest.capacity.calibration.profile_file import MISAKI_TOKENS_PER_CHAR, load_observations
from bidi_tts_loadtest.core import exit_codes


def main(argv: list[str]) -> int:
    """Run the calibrate subcommand on its arguments (those after ``calibrate``); the exit code."""
    p = exit_codes.Parser(prog="python -m loadtest.capacity calibrate",
                          description="Fit a timed-backend profile to a running container at one session.")
    p.add_argument("--container-url", help="http://HOST:PORT of a running container")
    p.add_argument("--refit", type=Path, metavar="PROFILE",
                   help="instead of measuring: fit again from the observations a calibration kept in PROFILE")
    p.add_argument("--out", type=Path, required=True, help="the profile JSON to write")
    p.add_argument("--name", help="the profile's name (default: the file's stem)")
    p.add_argument("--repeats", type=int, default=3, help="rounds over the calibration texts (after a warm-up round)")
    p.add_argument("--first-clause-chars", type=int, default=0,
                   help="the container's first-clause cut: 0 (the default) for a reference container started "
                        "with --first-clause-chars 0, as a calibration should be; its default is 40")
    p.add_argument("--tokens-per-char", type=float, default=MISAKI_TOKENS_PER_CHAR,
                   help="phoneme tokens per character used to state the fit per token")
    args = p.parse_args(argv)
    if (args.container_url is None) == (args.refit is None):
        p.error("give --container-url (measure a container) or --refit PROFILE (fit its kept observations)")
    if args.refit is not None:
        if not args.refit.is_file():
            p.error(f"--refit: file {str(args.refit)!r} does not exist")
        if not args.out.parent.is_dir():
            p.error(f"folder {str(args.out.parent)!r} does not exist")
        try:  # a file that is no calibration profile is a usage error, found before anything is fitted
            load_observations(args.refit)
        except ValueError as exc:
            p.error(f"--refit: {exc}")
        try:
            return calibrate.refit(args.refit, args.out, name=args.name, tokens_per_char=args.tokens_per_char)
        except ValueError as exc:
            print(f"capacity calibrate: {exc}", file=sys.stderr)
            return exit_codes.RUN_FAILED
    if not args.container_url.startswith(("http://", "https://")):
        p.error("--container-url must start with http:// or https://")
    if args.repeats < 1 or args.tokens_per_char <= 0:
        p.error("--repeats must be at least 1 and --tokens-per-char positive")
    if not args.out.parent.is_dir():
        p.error(f"folder {str(args.out.parent)!r} does not exist")
    try:
        return calibrate.run(args.container_url, args.out, name=args.name or args.out.stem, repeats=args.repeats,
                             first_clause_chars=args.first_clause_chars, tokens_per_char=args.tokens_per_char)
    except (OSError, TransportError) as exc:
        print(f"capacity calibrate: cannot reach {args.container_url}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return exit_codes.UNREACHABLE
    except (TimeoutError, RuntimeError, ValueError) as exc:
        print(f"capacity calibrate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return exit_codes.RUN_FAILED
