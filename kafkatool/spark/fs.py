"""Files behind URLs (``s3://``, ``hdfs://``, ``file://``...) through :mod:`pyarrow.fs`: one filesystem client
per store and process, a URL as rows show it (no credentials, no options), and a URL dir listed for
:mod:`kafkatool.walk`; local paths opened as regular files (:func:`kafkatool.filetypes.open_regular`).
"""

from __future__ import annotations


def is_url(path: str) -> bool:
    """Read through pyarrow.fs (``file://`` URLs too, which is how the tests exercise that path)."""
    return "://" in path


def display(path: str) -> str:
    """``s3://key:secret@bucket/a?endpoint_override=...`` -> ``s3://bucket/a``; a local path unchanged."""
    if not is_url(path):
        return path
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(path)
    return urlunsplit((u.scheme, u.netloc.rpartition("@")[2], u.path, "", ""))


def open_input(path: str):
    """A binary file object for a local path or a pyarrow.fs URL (what ``records.scan`` reads through)."""
    if not is_url(path):
        from kafkatool.filetypes import open_regular

        return open_regular(path, buffering=0)  # scan reads through its own window: no second copy
    filesystem, inner = filesystem_of(path)
    return filesystem.open_input_file(inner)


def _url_parts(url: str) -> tuple[str, str]:
    """``(the URL without its path, the percent-decoded path)``: every file of one store shares the first."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    u = urlsplit(url)
    return urlunsplit((u.scheme, u.netloc, "", u.query, "")), unquote(u.path)


# Store (a URL without its path) -> (filesystem, the inner path its URLs' paths are appended to), or None
# for a store whose URLs pyarrow does not map that way. One per executor process; see filesystem_of.
_STORES: dict[str, tuple | None] = {}


def filesystem_of(url: str) -> tuple:
    """``pyarrow.fs.FileSystem.from_uri(url)``, with one filesystem for all URLs of the same store.

    ``from_uri`` builds a new client each time: an S3 client walks the credential chain, and without
    ``region=`` in the URL it sends a HeadBucket to find the bucket's region (seen here: a 6 s timeout
    per call with no route to AWS). Per file opened that was up to four of each per segment at the
    findings level; now it is once per store and process. The first URL of a store is resolved by
    ``from_uri`` itself, which gives the prefix the others' paths go after (the bucket for ``s3://``,
    nothing for ``hdfs://`` or ``file://``); a store whose inner path does not end with the URL's path
    is never shared. pyarrow filesystems are safe to use from several threads.
    """
    from pyarrow import fs as pafs

    key, path = _url_parts(url)
    store = _STORES.get(key, False)
    if store is None:
        return pafs.FileSystem.from_uri(url)
    if store is not False:
        return store[0], store[1] + path
    filesystem, inner = pafs.FileSystem.from_uri(url)
    _STORES[key] = (filesystem, inner[:len(inner) - len(path)]) if inner.endswith(path) else None
    return filesystem, inner


class ArrowStore:
    """:class:`kafkatool.walk.UrlStore` through :mod:`pyarrow.fs`, for one URL."""

    def __init__(self, url: str) -> None:
        from pyarrow import fs as pafs

        self.filesystem, self.root = pafs.FileSystem.from_uri(url)

    def files_under(self, path: str) -> list[str] | None:
        from pyarrow import fs as pafs

        info = self.filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            infos = self.filesystem.get_file_info(pafs.FileSelector(path, recursive=True))
            return [i.path for i in infos if i.type == pafs.FileType.File]
        return [path] if info.type == pafs.FileType.File else None


__all__ = ["ArrowStore", "display", "filesystem_of", "is_url", "open_input"]
