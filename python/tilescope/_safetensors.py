"""The safetensors container, read as hostile input and written atomically.

A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON (an object of
``{"dtype", "shape", "data_offsets"}`` entries and an optional ``__metadata__`` object of
strings), then one data buffer that the entries cover exactly. Every rule the C++ reader applies
to the container (docs/trace-format.md, "What the reader checks") is applied here before any
tensor is built; every violation is a :class:`TraceFormatError` naming the file and the problem.
No allocation is sized by the file's claims before they were checked against the file's size.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import stat
import struct
import threading
from typing import Any, Dict, Iterator, Mapping, Tuple

import numpy as np

#: Header length limit (the C++ reader's).
MAX_HEADER_BYTES = 100 << 20  # the C++ reader's kSafetensorsMaxHeaderBytes (docs/trace-format.md)
#: Dimensions a shape may have.
MAX_DIMS = 64

# safetensors dtype -> (numpy dtype, element size). BF16 has no numpy dtype: stored as <u2.
DTYPES: Dict[str, Tuple[str, int]] = {
    "BOOL": ("?", 1), "U8": ("u1", 1), "I8": ("i1", 1), "I16": ("<i2", 2), "U16": ("<u2", 2),
    "I32": ("<i4", 4), "U32": ("<u4", 4), "I64": ("<i8", 8), "U64": ("<u8", 8),
    "F16": ("<f2", 2), "BF16": ("<u2", 2), "F32": ("<f4", 4), "F64": ("<f8", 8),
}


class TraceFormatError(ValueError):
    """A file that is not a valid tilescope trace: the message names the file and the problem."""


class RawTensor:
    """A tensor as stored: its safetensors dtype name, shape and a read-only numpy array.

    BF16 tensors hold their raw 16-bit patterns (``uint16``); :func:`widen_bf16` makes the
    exact float32 values.
    """

    __slots__ = ("dtype", "shape", "array")

    def __init__(self, dtype: str, shape: Tuple[int, ...], array: np.ndarray) -> None:
        self.dtype = dtype
        self.shape = shape
        self.array = array


def widen_bf16(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32, exactly (bf16 is float32's upper half)."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns (uint16), round to nearest even; NaN stays NaN."""
    x = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((x + np.uint32(0x7FFF) + ((x >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(values)
    if np.any(nan):
        rounded = np.where(nan, ((x >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16), rounded)
    return rounded


def _fail(path: str, what: str) -> "TraceFormatError":
    return TraceFormatError(f"{path}: {what}")


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _available_memory() -> "int | None":
    """The memory this process may read a file into without swapping: the kernel's MemAvailable
    (free memory plus reclaimable caches), at most the machine's memory; None where unknown."""
    try:
        memory = int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None
    if memory <= 0:
        return None
    try:
        with open("/proc/meminfo", "rb") as info:
            for line in info:
                if line.startswith(b"MemAvailable:"):
                    return min(memory, int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return memory


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _open_regular(name: str):
    """(binary file, size) of the regular file `name`; OSError for a folder, FIFO or device."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    # Checked on the descriptor before it becomes a file object, which would refuse a folder
    # itself, naming the descriptor's number instead of the path.
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{name}: not a regular file (a folder, FIFO or device)")
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), st.st_size


def _read_header(f, size: int, name: str):
    """The checked header of an open safetensors file of `size` bytes, read from its start:
    (metadata, entries, data size). TraceFormatError for any defect."""
    if size < 8:
        raise _fail(name, f"{size} bytes: too short for a safetensors header length (8 bytes)")
    length = f.read(8)
    if len(length) != 8:
        raise _fail(name, "the file changed size while it was read")
    (n,) = struct.unpack("<Q", length)
    if n > MAX_HEADER_BYTES:
        raise _fail(name, f"header length {n} exceeds the limit of {MAX_HEADER_BYTES} bytes")
    if n > size - 8:
        raise _fail(name, f"header length {n} runs past the end of the file ({size} bytes)")
    header_bytes = f.read(n)
    if len(header_bytes) != n:
        raise _fail(name, "the file changed size while it was read")
    data_size = size - 8 - n
    metadata, entries = _check_header(name, header_bytes, data_size)
    return metadata, entries, data_size


def read_safetensors(path: "str | os.PathLike[str]") -> Tuple[Dict[str, RawTensor], Dict[str, str]]:
    """Reads a safetensors file into memory this process owns and checks its container.

    The header is read and checked against the file's size first; the data are read only when
    the header covers them exactly and they fit in the memory available (the C++ reader's order:
    a damaged header in front of gigabytes of data, or a sparse file, costs nothing).

    Returns the tensors (name -> :class:`RawTensor`) and the metadata (strings). Raises
    :class:`TraceFormatError` for any defect, :class:`FileNotFoundError` / :class:`OSError` for a
    file that cannot be read (a folder, a FIFO, one larger than the memory available...).
    """
    name = os.fspath(path)
    f, size = _open_regular(name)
    with f:
        metadata, entries, data_size = _read_header(f, size, name)
        available = _available_memory()
        if available is not None and data_size > available:
            raise OSError(f"{name}: the file is {_gib(size)}, more than the memory available to read it into "
                          f"({_gib(available)})")
        data = f.read(data_size)  # bounded by the file's size, which the header covers exactly
        if len(data) != data_size or f.read(1):
            raise _fail(name, "the file changed size while it was read")

    buffer = np.frombuffer(data, dtype=np.uint8)
    tensors: Dict[str, RawTensor] = {}
    for tname, dtype, shape, begin, end in entries:
        try:
            array = buffer[begin:end].view(DTYPES[dtype][0]).reshape(shape)
        except ValueError as e:  # numpy's own limits on a shape (e.g. of no elements but huge dimensions)
            raise _fail(name, f"tensor {tname!r}: shape {shape} cannot be held as an array ({e})") from None
        array.flags.writeable = False
        tensors[tname] = RawTensor(dtype, tuple(shape), array)
    return tensors, metadata


def _check_header(name: str, header_bytes: bytes, data_size: int):
    """The metadata and the tensor entries (name, dtype, shape, begin, end) of a header, every
    entry checked and the data buffer of `data_size` bytes covered exactly."""
    try:
        header = json.loads(header_bytes.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as e:
        raise _fail(name, f"header is not valid UTF-8 ({e})") from None
    except (ValueError, RecursionError) as e:
        raise _fail(name, f"header is not valid JSON ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(header, dict):
        raise _fail(name, "header is not a JSON object")

    metadata: Dict[str, str] = {}
    if "__metadata__" in header:
        meta = header.pop("__metadata__")
        if not isinstance(meta, dict):
            raise _fail(name, "__metadata__ is not an object")
        for key, value in meta.items():
            if not isinstance(value, str):
                raise _fail(name, f"metadata value of {key!r} is not a string")
        metadata = dict(meta)

    entries = []
    for tname, entry in header.items():
        where = f"tensor {tname!r}"
        if not isinstance(entry, dict):
            raise _fail(name, f"{where}: entry is not an object")
        if set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _fail(name, f"{where}: entry must have exactly dtype, shape and data_offsets (has {sorted(entry)})")
        dtype = entry["dtype"]
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise _fail(name, f"{where}: unknown dtype {dtype!r} (known: {' '.join(DTYPES)})")
        shape = entry["shape"]
        if not isinstance(shape, list) or len(shape) > MAX_DIMS or not all(
            type(d) is int and d >= 0 for d in shape
        ):
            raise _fail(name, f"{where}: shape must be a list of at most {MAX_DIMS} non-negative integers")
        offsets = entry["data_offsets"]
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
            raise _fail(name, f"{where}: data_offsets must be two integers")
        begin, end = offsets
        if not 0 <= begin <= end <= data_size:
            raise _fail(name, f"{where}: data_offsets [{begin}, {end}] outside the data buffer ({data_size} bytes)")
        elem = DTYPES[dtype][1]
        count, running = 1, elem
        for d in shape:
            count *= d  # Python integers: no overflow
            running *= d  # the C++ reader's uint64 byte size, dimension by dimension
            if d > 2**63 - 1 or running > 2**64 - 1:
                raise _fail(name, f"{where}: shape {shape} is too large: its byte size overflows")
        if count * elem != end - begin:
            raise _fail(name, f"{where}: shape {shape} of {dtype} needs {count * elem} bytes, data_offsets give {end - begin}")
        entries.append((tname, dtype, shape, begin, end))
    at = 0
    for tname, _, _, begin, end in sorted(entries, key=lambda e: (e[3], e[4])):
        if begin != at:
            what = "overlaps the tensor before it" if begin < at else f"leaves a hole at bytes [{at}, {begin})"
            raise _fail(name, f"tensor {tname!r} {what}: the data buffer must be covered exactly")
        at = end
    if at != data_size:
        raise _fail(name, f"the data buffer has {data_size - at} bytes no tensor covers")
    return metadata, entries


def _what_is(st: os.stat_result) -> str:
    mode = st.st_mode
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _output_file(target: str) -> str:
    """The regular file that writing `target` replaces, by the rule every writer of tilescope's
    keeps (docs/file-safety.md): a missing path is created; an existing one must be a regular file,
    or a symbolic link to one, which is written through (the link stays); a folder, FIFO, device
    or socket, or a link to one or to nothing, is refused (OSError) and left as it was."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target
    if stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(target)
        try:
            st = os.stat(real)
        except FileNotFoundError:
            raise OSError(f"cannot write {target}: it is a symbolic link to nothing ({real}); choose another path") from None
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"cannot write {target}: it is a symbolic link to {_what_is(st)} ({real}), not to a regular "
                          "file; tilescope replaces only a regular file: choose another path")
        return real
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"cannot write {target}: it is {_what_is(st)}, not a regular file; tilescope replaces only a "
                      "regular file: choose another path")
    return target


def _check_replaces_only(target: str, real: str, metadata_key: str) -> None:
    """A file whose safetensors header holds `metadata_key` in its metadata may be replaced, as may
    an empty one; anything else is refused (OSError) and left as it was: the C++ writer's rule,
    check_replaces_only_a_trace in instrumentation/trace/trace_file.h (a typo in a trace's path
    must not turn someone's notes or data into a trace)."""
    try:
        size = os.stat(real).st_size
    except FileNotFoundError:
        return
    if size == 0:
        return

    def refuse(what: str) -> OSError:
        return OSError(f"cannot write trace {target}: it exists and {what}; a trace replaces only a trace: "
                       "choose another path, or move the file away")

    try:
        f, size = _open_regular(real)
    except OSError as e:
        raise refuse(f"cannot be read to tell whether it is a trace ({e.strerror or e})") from None
    with f:
        try:
            metadata, _, _ = _read_header(f, size, target)
        except TraceFormatError:
            what = "too short for a safetensors file" if size < 8 else "not a valid safetensors file"
            raise refuse(f"is not a tilescope trace ({what})") from None
    if metadata_key not in metadata:
        raise refuse("is not a tilescope trace (a safetensors file of something else)")


def write_safetensors(path: "str | os.PathLike[str]", tensors: Mapping[str, Tuple[str, np.ndarray]],
                      metadata: Mapping[str, str], replaces_only: "str | None" = None) -> None:
    """Writes tensors (name -> (safetensors dtype, array of that dtype's numpy layout)) atomically.

    Tensors are laid out largest element size first (each starts aligned to its element size);
    the header is padded with spaces so that the data starts 8-aligned. The file appears whole
    or not at all (a temporary file in the destination folder, renamed over it). With
    `replaces_only`, an existing non-empty file is replaced only when its metadata holds that key.
    """
    order = sorted(tensors.items(), key=lambda kv: (-DTYPES[kv[1][0]][1], kv[0]))
    header: Dict[str, Any] = {"__metadata__": dict(metadata)}
    blobs = []
    at = 0
    for tname, (dtype, array) in order:
        np_dtype, _ = DTYPES[dtype]
        a = np.ascontiguousarray(array, dtype=np_dtype)
        raw = a.tobytes()
        header[tname] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    target = os.fsdecode(path)
    real = check_output_path(target, replaces_only)
    folder = os.path.dirname(os.path.abspath(real))
    fd, tmp = _create_temp(folder, target)
    try:
        with _removed_on_termination(tmp):
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(struct.pack("<Q", len(text)))
                    f.write(text)
                    for raw in blobs:
                        f.write(raw)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # named by the user's path, not the temporary file's
                raise OSError(e.errno, f"cannot write {target}: {e.strerror}; nothing was written") from None
            if _output_file(target) != real:  # the path changed while the file was written
                raise OSError(f"{target}: the path changed while the trace was written; nothing was written")
            if replaces_only is not None:  # and what is there now, just before it is replaced
                _check_replaces_only(target, real, replaces_only)
            os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def check_output_path(path: "str | os.PathLike[str]", replaces_only: "str | None" = None) -> str:
    """What writing `path` is checked for before anything is computed (the CLI checks an output
    path before the run, too): a path, in a folder that exists, where _output_file's rule and, with
    `replaces_only`, _check_replaces_only's allow a file to be written. Returns the regular file that
    writing replaces (OSError naming the problem otherwise)."""
    target = os.fsdecode(path)
    if not target:
        raise OSError("the output path is empty: give the trace's file name")
    real = _output_file(target)
    folder = os.path.dirname(os.path.abspath(real))
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {target}: the folder {folder} does not exist (create it first)")
    if replaces_only is not None:
        _check_replaces_only(target, real, replaces_only)
    return real


def _create_temp(folder: str, target: str) -> Tuple[int, str]:
    """A new temporary file in `folder` (the C++ writer's AtomicFileWriter: mode 0666 less the
    umask, so that the trace gets the usual permissions, where mkstemp's 0600 would make it
    private), and its path; OSError naming `target` when it cannot be made."""
    for _ in range(100):
        tmp = os.path.join(folder, f".tilescope-{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
        except OSError as e:
            raise OSError(e.errno, f"cannot write {target}: cannot create a file in {folder} ({e.strerror})") from None
    raise OSError(f"cannot write {target}: no free temporary file name in {folder}")


@contextlib.contextmanager
def _removed_on_termination(tmp: str) -> Iterator[None]:
    """While a trace is written: SIGTERM and SIGHUP, where they would end the process without a
    word (their default action), first remove the temporary file, then end it as they would have
    (docs/file-safety.md: a signal leaves no half-written file). SIGINT raises KeyboardInterrupt,
    which the writer's cleanup handles. Only the main thread can set handlers."""
    installed = {}
    if threading.current_thread() is threading.main_thread():
        def handler(signum: int, frame: Any) -> None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, handler)
                installed[sig] = handler
    try:
        yield
    finally:
        for sig, h in installed.items():
            if signal.getsignal(sig) is h:
                signal.signal(sig, signal.SIG_DFL)
