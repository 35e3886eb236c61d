"""Outputs that would destroy inputs: refused before any work.

:func:`check_distinct_paths` is called by every command that writes files and reads others
(``simulate``, ``compare``, ``trace convert``, ``trace generate``, ``sweep``, ``reproduce``,
``bench``) before it reads or runs anything: an output path that names the same file as an input
(``simulate --output W.jsonl --trace W.jsonl``) or as another output (``--output X --timing X``)
is refused with exit status 4 (:data:`~shockwave.cli.exit_codes.OUTPUT`), the message naming
both options. Paths are compared resolved (symbolic links, ``..``, relative to the working
directory) and, where both exist, with :func:`os.path.samefile` (hard links).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from os import PathLike

from shockwave.atomic import atomic_write_text, same_file
from shockwave.errors import OutputError

PathArgument = str | PathLike[str] | None


def check_distinct_paths(
    outputs: Mapping[str, PathArgument],
    inputs: Mapping[str, PathArgument] | None = None,
    *,
    replaces: Collection[tuple[str, str]] = (),
) -> None:
    """Refuse an output that is the same file as an input or as another output.

    Args:
        outputs: option (``"--output"``) to path; ``None`` or ``""``: not given.
        inputs: option (``"--trace"``) to path; ``None`` or ``""``: not given.
        replaces: ``(output option, input option)`` pairs that may name one file on purpose
            (``simulate --resume FILE`` checkpoints on to ``FILE``).

    Raises:
        OutputError: (exit status 4) naming both options and the path.
    """
    given_outputs = [(option, path) for option, path in outputs.items() if path]
    given_inputs = [(option, path) for option, path in (inputs or {}).items() if path]
    allowed = set(replaces)
    for index, (option, path) in enumerate(given_outputs):
        for source, source_path in given_inputs:
            if (option, source) not in allowed and same_file(path, source_path):
                raise OutputError(
                    f"{option} {path} is the same file as {source} {source_path}: writing it "
                    f"would destroy the input; choose another {option} path"
                )
        for other, other_path in given_outputs[:index]:
            if same_file(path, other_path):
                raise OutputError(
                    f"{other} {other_path} and {option} {path} are the same file: one would "
                    "overwrite the other; give each output its own path"
                )


def write_output(path: str | PathLike[str], option: str, text: str) -> None:
    """Write an output file atomically.

    Raises:
        OutputError: (exit status 4) naming the option and the path when the write fails; the
            previous file is intact.
    """
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise OutputError(
            f"{option} {path}: the write failed ({exc.strerror}); the previous file is intact"
        ) from None
