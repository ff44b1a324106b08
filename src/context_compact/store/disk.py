"""The file half of a store on disk: one layout, atomic writes, and which paths were issued.

Layout under ``root`` (the seed's S-1.3 and S-2.4 for its files, plus our own):

    .task_outputs/tool-results/<safe id>.txt         seed: one per tool_use id, never rewritten
    .task_outputs/tool-results/sha256-<32 hex>.txt   save_blob: content-addressed
    .task_outputs/media/sha256-<32 hex>.<ext>        save_media: an image or PDF, its bytes
    .transcripts/transcript_<uuid4 hex>.jsonl        seed: a new one per snip or summary
    .transcripts/archive_<32 hex>.jsonl              save_messages: content-addressed
    .transcripts/<name>                              append_file: grows, its path fixed by name

Invariants:

* A path is returned only once its file holds the whole text. Whole files go to a temporary
  file that is renamed into place, so a reader never sees half a copy and a crash never leaves
  a truncated one; ``append_file`` adds at the end of its file.
* Texts are stored as UTF-8 with lone surrogates passed through ("surrogatepass") and read
  back the same way: every ``str`` comes back exactly, also tool output that was not UTF-8.
* A content-addressed file is written once: an existing file with the same bytes is left
  alone (mtime included); one with other bytes (truncated, tampered with) is replaced. A
  seed tool-result file is never rewritten (S-1.3 reuses an existing file).
* Media files hold bytes, not text: ``read_bytes`` gives them back, ``read_text`` refuses
  them (``ValueError`` naming the path), so no caller takes an image for text.
* ``issued`` answers from what the concrete store remembers (``_remember``/``_known``), never
  from what happens to exist on disk: a file someone else put under ``root`` is not ours.

``FileStore`` remembers in a ledger file, ``SqliteStore`` in its database (which also keeps a
copy of every text, so a deleted file can be re-exported: ``_recover``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import LinkRefused
from ..media import extension
from ..messages import Message, plain_role
from ..sizing import to_json
from .nofollow import open_file, read_file

RESULTS = ".task_outputs/tool-results"
MEDIA = ".task_outputs/media"
TRANSCRIPTS = ".transcripts"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NAME = re.compile(r"[A-Za-z0-9._/-]+")
# Every relative path a store issues matches this; anything else is not ours without a lookup.
_ISSUABLE = re.compile(r"\.(task_outputs|transcripts)/[A-Za-z0-9._/-]+")


def issuable(rel: str) -> bool:
    """Whether ``rel`` (relative to root, POSIX form) has the form of a path a store issues."""
    return _ISSUABLE.fullmatch(rel) is not None


def safe_id(tool_use_id: Any) -> str:
    """S-1.3: characters outside ``[A-Za-z0-9._-]`` become ``_``, cut to 120."""
    return _UNSAFE.sub("_", str(tool_use_id))[:120]


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class EncodedMessages(list[Message]):
    """Messages with the JSON of some of their contents already made (``lines[i]``: the
    ``to_json`` of ``self[i]["content"]``, or None): ``jsonl`` writes the same bytes as for
    a plain list without encoding those contents again. The caller vouches for the texts."""

    def __init__(self, messages: list[Message], contents: list[str | None]) -> None:
        super().__init__(messages)
        self.contents = contents


def _line(message: Message, content: str | None) -> str:
    # to_json of {"role": r, "content": c} is exactly this when c's JSON is already made.
    role = plain_role(message) if content is not None else None
    if role is not None:
        return f'{{"role": {to_json(role)}, "content": {content}}}'
    return to_json(message)


def jsonl(messages: list[Message]) -> str:
    # to_json, not strict JSON: the seed's transcripts stringify what JSON cannot hold.
    if isinstance(messages, EncodedMessages):
        return "".join(_line(m, t) + "\n" for m, t in zip(messages, messages.contents, strict=True))
    return "".join(to_json(m) + "\n" for m in messages)


# -- relative paths of the layout (shared with MemoryStore, which has no disk) ----------------
def tool_result_rel(tool_use_id: str) -> str:
    return f"{RESULTS}/{safe_id(tool_use_id)}.txt"


def blob_rel(digest: str) -> str:
    return f"{RESULTS}/sha256-{digest[:32]}.txt"


def media_rel(digest: str, media_type: str) -> str:
    return f"{MEDIA}/sha256-{digest[:32]}.{extension(media_type)}"


def is_media(rel: str) -> bool:
    return rel.startswith(MEDIA + "/")


def media_digest(path: str) -> str | None:
    """The start of the sha256 of the bytes a media path the store issued names (its file
    name, ``media_rel``); None for any other path."""
    if f"/{MEDIA}/" not in path:
        return None
    return path.rsplit("/sha256-", 1)[-1].split(".", 1)[0]


def binary_file(path: str) -> ValueError:
    return ValueError(f"{path} is a binary media file, not text: use read_bytes")


def transcript_rel(token: str) -> str:
    return f"{TRANSCRIPTS}/transcript_{token}.jsonl"


def archive_rel(digest: str) -> str:
    return f"{TRANSCRIPTS}/archive_{digest[:32]}.jsonl"


def append_rel(name: str) -> str:
    """The path of ``append_file(name)``; ``ValueError`` naming ``name`` unless it is safe."""
    parts = name.split("/") if isinstance(name, str) else []
    if (
        not isinstance(name, str)
        or not _NAME.fullmatch(name)
        or any(part in ("", ".", "..") for part in parts)
        or (parts[0] == "sessions" and name.endswith((".jsonl", ".meta.json", ".head", ".lock")))
    ):
        # The second rule keeps FileStore's journals (sessions/<id>.jsonl) out of reach.
        raise ValueError(
            f"not a safe relative file name: {name!r} (characters [A-Za-z0-9._/-], "
            "no '..', '.', empty or leading '/' part, not a journal, witness or lock file "
            "under 'sessions/')"
        )
    return f"{TRANSCRIPTS}/{name}"


# -- writing ------------------------------------------------------------------------------------
def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | Sequence[bytes]) -> None:
    """All of ``data`` (bytes, or pieces written as one ``writev``: a long journal line is
    not copied whole just to add its frame)."""
    if isinstance(data, bytes):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return
    pieces = [memoryview(piece) for piece in data if piece]
    while pieces:
        done = os.writev(fd, pieces)
        while pieces and done >= len(pieces[0]):
            done -= len(pieces[0])
            pieces.pop(0)
        if pieces and done:
            pieces[0] = pieces[0][done:]


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
SHARED_FILE = 0o666  # less the umask, as any program's files
SHARED_DIR = 0o777


def folder_mode(mode: int) -> int:
    return PRIVATE_DIR if mode == PRIVATE_FILE else SHARED_DIR


def make_dirs(path: Path, mode: int = PRIVATE_DIR) -> None:
    """``path`` and its missing parents, each made with ``mode`` (``mkdir(parents=True)``
    gives the parents the umask's mode)."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=mode)


def atomic_write(path: Path, data: bytes, durable: bool = False, mode: int = PRIVATE_FILE) -> None:
    """``path`` holds ``data`` afterwards, or (on any failure) what it held before. A symbolic
    link at ``path`` is replaced, never followed."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = _open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def _open(path: Path, flags: int, mode: int = PRIVATE_FILE) -> int:
    """``os.open`` (never through a symbolic link: ``LinkRefused``), making the folder first
    if it is missing."""
    try:
        return open_file(path, flags, mode)
    except FileNotFoundError:
        make_dirs(path.parent, folder_mode(mode))
        return open_file(path, flags, mode)


def append_bytes(
    path: Path,
    data: bytes | Sequence[bytes],
    durable: bool = False,
    mode: int = PRIVATE_FILE,
    lines: bool = False,
) -> None:
    """Add ``data`` at the end of ``path`` with one ``write`` or ``writev`` (O_APPEND: also
    across processes); a symbolic link at ``path`` is refused (``LinkRefused``), never
    followed. ``lines``: ``data`` starts a line, so after a last line cut short (a write
    that failed half-way, a full disk) a newline goes first: never glued to the torn one."""
    flags = (os.O_RDWR if lines else os.O_WRONLY) | os.O_APPEND | os.O_CREAT
    created = durable and not os.path.lexists(path)
    fd = _open(path, flags, mode)
    try:
        end = os.fstat(fd).st_size if lines else 0
        if end and os.pread(fd, 1, end - 1) != b"\n":
            data = b"\n" + data if isinstance(data, bytes) else [b"\n", *data]
        write_all(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)  # the new file's directory entry, or the file is not durable


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        if path.lstat().st_size != len(data) or path.is_symlink():
            return False
        return read_file(path) == data
    except FileNotFoundError:
        return False


class DiskFiles:
    """The file half of the Store protocol over the layout above.

    Subclasses say where issued paths are remembered: ``_remember(rel, kind, data)`` runs
    *before* the file is written (so a crash in between leaves the store knowing more, never
    less; the path was not returned yet), ``_known(rel)`` answers ``issued``, and
    ``_recover(rel)`` may return the bytes of a file that was deleted behind our back."""

    def __init__(
        self, root: str | os.PathLike[str], durable: bool = False, private: bool = True
    ) -> None:
        self.root_path = Path(root)
        self.root: str = str(self.root_path)
        self.results_dir = self.root_path / RESULTS
        self.transcripts_dir = self.root_path / TRANSCRIPTS
        self.durable = durable
        self.file_mode = PRIVATE_FILE if private else SHARED_FILE
        self.read_only: str | None = None  # why writes are refused: a database store's
        self._abs_root = os.path.abspath(self.root)
        self._real_root = os.path.realpath(self.root)

    def inside(self, rel: str) -> Path:
        """``root / rel``, refused (``PermissionError``) when a folder on the way is a symbolic
        link: the store made none, so one there was planted, and would lead outside root."""
        path = self.root_path / rel
        expected = os.path.normpath(os.path.join(self._real_root, os.path.dirname(rel)))
        if os.path.realpath(path.parent) != expected:
            raise LinkRefused(path, "a folder on the way that is a symbolic link")
        return path

    # -- what a concrete store provides --------------------------------------------------------
    def _remember(self, rel: str, kind: str, data: bytes | None) -> None:
        """``rel`` is about to be issued; ``data`` its bytes (None: a kept file, or an append)."""
        raise NotImplementedError

    def _known(self, rel: str) -> bool:
        raise NotImplementedError

    def _recover(self, rel: str) -> bytes | None:
        return None

    # -- the protocol ------------------------------------------------------------------------
    def save_tool_result(self, tool_use_id: str, content: str) -> str:
        rel = tool_result_rel(tool_use_id)
        path = self.inside(rel)
        if path.exists():
            self._remember(rel, "tool_result", None)
        else:
            data = encode(content)
            self._remember(rel, "tool_result", data)
            atomic_write(path, data, self.durable, self.file_mode)
        return str(path)

    def save_blob(self, content: str) -> str:
        data = encode(content)
        return self._save_addressed(blob_rel(sha256(data)), "blob", data)

    def save_pack(self, pieces: list[str]) -> str:
        return self.save_blob("".join(pieces))

    def save_media(self, data: bytes, media_type: str) -> str:
        return self._save_addressed(media_rel(sha256(data), media_type), "media", data)

    def write_transcript(self, messages: list[Message]) -> str:
        rel = transcript_rel(uuid.uuid4().hex)
        data = encode(jsonl(messages))
        self._remember(rel, "transcript", data)
        atomic_write(self.inside(rel), data, self.durable, self.file_mode)
        return str(self.root_path / rel)

    def save_messages(self, messages: list[Message]) -> str:
        data = encode(jsonl(messages))
        return self._save_addressed(archive_rel(sha256(data)), "archive", data)

    def append_file(self, name: str, text: str) -> str:
        rel = append_rel(name)
        self._remember(rel, "append", None)
        data = encode(text)
        lines = data.endswith(b"\n")
        append_bytes(self.inside(rel), data, self.durable, self.file_mode, lines)
        return str(self.root_path / rel)

    def issued(self, path: str) -> bool:
        rel = self.relative(path)
        return rel is not None and self._known(rel)

    def read_text(self, path: str) -> str:
        rel = self.relative(path)
        if rel is not None and is_media(rel) and self._known(rel):
            raise binary_file(path)
        return decode(self.read_bytes(path))

    def read_bytes(self, path: str) -> bytes:
        rel = self.relative(path)
        if rel is None or not self._known(rel):
            raise KeyError(f"not a path this store issued: {path}")
        file = self.inside(rel)
        try:
            return read_file(file)
        except FileNotFoundError:
            data = self._recover(rel)
            if data is None:
                raise
            if self.read_only is None:  # a read-only store only serves it
                atomic_write(file, data, self.durable, self.file_mode)
            return data

    def relative(self, path: str) -> str | None:
        """``path`` relative to ``root`` (POSIX form) when it can be one we issued, else None."""
        if not isinstance(path, str):
            return None
        full = os.path.abspath(path)
        prefix = self._abs_root.rstrip(os.sep) + os.sep
        if not full.startswith(prefix):
            return None
        rel = Path(full[len(prefix) :]).as_posix()
        return rel if issuable(rel) else None

    def _save_addressed(self, rel: str, kind: str, data: bytes) -> str:
        path = self.inside(rel)
        self._remember(rel, kind, data)
        if not _same_bytes(path, data):
            atomic_write(path, data, self.durable, self.file_mode)
        return str(path)
