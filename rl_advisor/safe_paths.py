"""Open files named by an MCP client read-only, and only inside allowed folders.

An agent (or whoever talks to the server over HTTP) can send any string as a path. Without a
check, ``diagnose_run(path="/home/me/.ssh/id_rsa")`` or ``"../../etc/shadow"`` or a symlink
planted in the working folder would make the server read and echo files the user never meant
to share. Here a path is accepted only when its fully resolved form (``os.path.realpath``: every
symlink and ``..`` followed) lies under one of the allowed roots:

* the server's current working folder (where the user started it),
* the rl-advisor data folder (run logs and metrics of launched runs),
* every folder listed in ``RL_ADVISOR_ALLOWED_ROOTS`` (``os.pathsep``-separated).

Who is checked: paths that arrive through the MCP server (``untrusted_caller()`` is entered
by the server's tool wrapper, so in-process, stdio and HTTP calls are all covered). A person at
the CLI or Python code calling a function directly is the user themself: their paths are still
opened read-only and resolved, but not confined to the roots (``open_input`` /
``check_input_path`` / ``writable_dir`` make that switch; ``open_for_reading`` always confines).

The file is then opened ``O_RDONLY | O_NOFOLLOW | O_NONBLOCK`` on the resolved path, and the
opened descriptor is checked again (a regular file, and on Linux its ``/proc/self/fd`` target
still under a root), so swapping a path component for a symlink between the check and the open
(a TOCTOU race) does not let a read escape. FIFOs, devices and sockets are refused: they could
block the server or stream forever.
"""

from __future__ import annotations

import contextvars
import io
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterable, Iterator

from advisor.errors import AdvisorError

ROOTS_ENV = "RL_ADVISOR_ALLOWED_ROOTS"
MAX_PATH_LEN = 4096

_UNTRUSTED: contextvars.ContextVar[bool] = contextvars.ContextVar("rl_advisor_untrusted_caller",
                                                                  default=False)


@contextmanager
def untrusted_caller() -> Iterator[None]:
    """Mark the code inside as serving a remote client (an MCP call): paths are confined."""
    token = _UNTRUSTED.set(True)
    try:
        yield
    finally:
        _UNTRUSTED.reset(token)


def confining() -> bool:
    """Are client-supplied paths confined to the allowed roots right now?"""
    return _UNTRUSTED.get()


def allowed_roots(extra: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """The folders MCP-supplied paths may point into, resolved, without duplicates."""
    from backends.data_folder import data_dir

    candidates: list[str | os.PathLike[str]] = [os.getcwd(), data_dir(), *extra]
    env = os.environ.get(ROOTS_ENV, "")
    candidates += [p for p in env.split(os.pathsep) if p.strip()]
    out: list[Path] = []
    for c in candidates:
        root = Path(os.path.realpath(os.path.expanduser(os.fspath(c))))
        if root not in out:
            out.append(root)
    return out


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _describe(roots: list[Path]) -> str:
    return (", ".join(str(r) for r in roots) +
            f" (add folders with {ROOTS_ENV}, separated by '{os.pathsep}')")


def resolve_allowed(path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]] | None = None,
                    *, field: str = "path", want: str = "file") -> Path:
    """The resolved ``path`` if it exists inside an allowed root, else an AdvisorError naming
    ``field``. ``want`` is ``"file"``, ``"dir"`` or ``"any"``. ``roots=None`` means
    :func:`allowed_roots`; relative paths are taken from the current folder."""
    if not isinstance(path, (str, os.PathLike)):
        raise AdvisorError("must be a path string", field=field, value=repr(path)[:80])
    text = os.fspath(path)
    if not text or not text.strip():
        raise AdvisorError("empty path", field=field, value=text, allowed="a file path")
    if "\x00" in text or len(text) > MAX_PATH_LEN:
        raise AdvisorError("not a usable path (NUL byte or longer than 4096 characters)",
                           field=field, value=text[:80])
    root_list = allowed_roots() if roots is None else [Path(os.path.realpath(os.fspath(r))) for r in roots]
    resolved = Path(os.path.realpath(os.path.expanduser(text)))
    if not _inside(resolved, root_list):
        raise AdvisorError("outside the folders this server may read (after resolving symlinks "
                           "and '..')", field=field, value=text, allowed=_describe(root_list))
    if not resolved.exists():
        raise AdvisorError("no such file", field=field, value=text,
                           allowed="an existing file under " + _describe(root_list))
    if want == "file" and not resolved.is_file():
        raise AdvisorError("not a regular file", field=field, value=text,
                           allowed="a regular file (not a folder, FIFO or device)")
    if want == "dir" and not resolved.is_dir():
        raise AdvisorError("not a folder", field=field, value=text, allowed="a folder")
    return resolved


def open_for_reading(path: str | os.PathLike[str],
                     allowed_roots: Iterable[str | os.PathLike[str]] | None = None, *,
                     binary: bool = False, encoding: str = "utf-8", errors: str = "replace",
                     field: str = "path") -> IO[str] | IO[bytes]:
    """Open a client-supplied file read-only, only if it really lies under an allowed root.

    Text mode decodes with ``errors="replace"`` by default: a log with a bad byte is still read
    (the metric readers skip what they cannot parse) instead of failing the whole call.
    """
    roots = _roots_or_default(allowed_roots)
    resolved = resolve_allowed(path, roots, field=field, want="file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        raise AdvisorError(f"cannot open: {exc.strerror}", field=field, value=os.fspath(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AdvisorError("not a regular file", field=field, value=os.fspath(path),
                               allowed="a regular file (not a FIFO, device or socket)")
        actual = _fd_path(fd)
        if actual is not None and not _inside(actual, roots):
            raise AdvisorError("the file moved outside the allowed folders while being opened",
                               field=field, value=os.fspath(path), allowed=_describe(roots))
        # back to blocking reads for the caller (regular files never block anyway)
        os.set_blocking(fd, True)
        raw = io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    buffered = io.BufferedReader(raw)
    if binary:
        return buffered
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors)


def read_text(path: str | os.PathLike[str],
              allowed_roots: Iterable[str | os.PathLike[str]] | None = None, *,
              field: str = "path", max_bytes: int | None = None) -> str:
    """The text of an allowed file (undecodable bytes replaced), at most ``max_bytes`` of it."""
    with open_for_reading(path, allowed_roots, binary=True, field=field) as fh:
        data = fh.read() if max_bytes is None else fh.read(max_bytes)
    return data.decode("utf-8", errors="replace")


def read_input_file(path: str | os.PathLike[str], *, field: str = "path",
                    max_bytes: int = 1 << 20) -> str:
    """The text of a small input file a caller named (a Plan, a config): a regular file only
    (a FIFO would block, ``/dev/zero`` would grow forever), at most ``max_bytes``, confined to the
    allowed roots under an MCP call. Errors name ``field``."""
    if confining():
        resolve_allowed(path, field=field, want="file")
    text = os.fspath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.expanduser(text), flags)
    except OSError as exc:
        raise AdvisorError(f"cannot read file: {exc.strerror}", field=field, value=text,
                           allowed="a readable regular file") from None
    with io.FileIO(fd, "rb", closefd=True) as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise AdvisorError("not a regular file", field=field, value=text,
                               allowed="a regular file (not a folder, FIFO, device or socket)")
        os.set_blocking(fd, True)
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise AdvisorError(f"file larger than {max_bytes} bytes", field=field, value=text,
                           allowed=f"a file of at most {max_bytes >> 10} KiB")
    return data.decode("utf-8", errors="replace")


def check_input_path(path: str | os.PathLike[str], *, field: str = "path", want: str = "any") -> Path:
    """A path a caller asked us to read: resolved and confined under an MCP call; for a local
    user only expanded (``~``) and required to exist."""
    if not os.fspath(path).strip():
        raise AdvisorError("empty path", field=field, value=os.fspath(path),
                           allowed="a file or folder (use '.' for the current folder)")
    if confining():
        return resolve_allowed(path, field=field, want=want)
    p = Path(os.path.expanduser(os.fspath(path)))
    if not p.exists():
        raise AdvisorError("no such file or directory", field=field, value=os.fspath(path),
                           allowed="an existing file or folder")
    if not (p.is_file() or p.is_dir()):
        raise AdvisorError("not a regular file or folder", field=field, value=os.fspath(path),
                           allowed="a regular file or a folder (not a FIFO, device or socket)")
    return p


def open_input(path: str | os.PathLike[str], *, field: str = "path") -> IO[bytes]:
    """Open a file a caller named, binary and read-only: confined under an MCP call
    (:func:`open_for_reading`), a plain read-only open for a local user."""
    if confining():
        return open_for_reading(path, binary=True, field=field)  # type: ignore[return-value]
    return open(path, "rb")


def writable_dir(path: str | os.PathLike[str], *, field: str = "output_dir") -> Path:
    """A folder a caller asked us to write into, created if needed.

    Under an MCP call it must resolve (symlinks followed, for the part that exists) inside an
    allowed root; otherwise a client could drop scripts into ``~/.config/autostart`` or
    ``/etc/cron.d``. The error never shows where an outside path resolves to. To *write* into
    the folder use :func:`open_output_dir`, which holds it open so it cannot be swapped.
    """
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
    if not text.strip() or "\x00" in text or len(text) > MAX_PATH_LEN:
        raise AdvisorError("not a usable folder path", field=field, value=repr(path)[:80])
    target = Path(os.path.realpath(os.path.expanduser(text)))
    if confining():
        roots = allowed_roots()
        if not _inside(target, roots):
            raise AdvisorError("outside the folders this server may write (after resolving "
                               "symlinks and '..')", field=field, value=text, allowed=_describe(roots))
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AdvisorError(f"cannot create the folder: {exc.strerror}", field=field,
                           value=text) from None
    if not target.is_dir():
        raise AdvisorError("not a folder", field=field, value=text)
    return target


class OutputDir:
    """A folder opened once (``O_DIRECTORY | O_NOFOLLOW``); every file is written relative to
    that descriptor, so swapping the folder (or a parent) for a symlink after the check changes
    nothing: the writes land in the folder that was checked.

    A file is written to a fresh private temporary name (``O_EXCL``), given its mode with
    ``fchmod`` on the descriptor, then renamed over the target inside the same folder. A symlink
    or hard link planted at the target's name is therefore replaced, never written through; a
    hard-linked target is refused outright, since someone linked it there on purpose.
    """

    def __init__(self, fd: int, path: Path, field: str):
        self.fd, self.path, self.field = fd, path, field

    def __enter__(self) -> "OutputDir":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def write(self, name: str, content: str | bytes, mode: int = 0o644) -> Path:
        if not name or name in (".", "..") or "/" in name or "\x00" in name:
            raise AdvisorError("file name escapes the output folder", field="artifact", value=name)
        try:
            existing = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISREG(existing.st_mode) and existing.st_nlink > 1:
            raise AdvisorError(f"{name} is a hard link to another file; refusing to replace it",
                               field=self.field, value=str(self.path / name),
                               allowed="remove the link, or choose another folder")
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise AdvisorError(f"{name} is a folder", field=self.field, value=str(self.path / name))
        data = content.encode("utf-8") if isinstance(content, str) else content
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
            getattr(os, "O_CLOEXEC", 0)
        fd = os.open(tmp, flags, 0o600, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb", closefd=True) as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            raise
        return self.path / name


def open_output_dir(path: str | os.PathLike[str], *, field: str = "output_dir",
                    mode: int | None = None) -> OutputDir:
    """Check, create and open the folder a caller asked us to write into (see
    :func:`writable_dir` for the confinement and :class:`OutputDir` for how files are written).
    ``mode`` (e.g. 0o700 for run folders) is set on the opened descriptor, not on the path."""
    target = writable_dir(path, field=field)
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise AdvisorError(f"the folder changed while being opened ({exc.strerror})", field=field,
                           value=os.fspath(path)) from None
    try:
        actual = _fd_path(fd)
        if confining() and actual is not None and not _inside(actual, allowed_roots()):
            raise AdvisorError("the folder moved outside the allowed folders while being opened",
                               field=field, value=os.fspath(path), allowed=_describe(allowed_roots()))
        if mode is not None:
            os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return OutputDir(fd, actual or target, field)


def _roots_or_default(roots: Iterable[str | os.PathLike[str]] | None) -> list[Path]:
    if roots is None:
        return allowed_roots()
    return [Path(os.path.realpath(os.fspath(r))) for r in roots]


def _fd_path(fd: int) -> Path | None:
    link = f"/proc/self/fd/{fd}"
    try:
        return Path(os.readlink(link))
    except OSError:
        return None


__all__ = ["ROOTS_ENV", "allowed_roots", "resolve_allowed", "open_for_reading", "read_text",
           "untrusted_caller", "confining", "check_input_path", "read_input_file", "open_input", "writable_dir",
           "OutputDir", "open_output_dir"]
