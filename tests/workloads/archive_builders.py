"""Archives built in memory for the loader tests (shared by several test files)."""
import io
import tarfile


def tar_bytes(members, mode: str = "w", format=tarfile.DEFAULT_FORMAT) -> bytes:
    """A tar (``mode`` "w", or "w:gz" …) of regular files: ``members`` is a dict or an iterable
    of ``(name, bytes)`` pairs, written in that order."""
    items = members.items() if isinstance(members, dict) else members
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=format) as tf:
        for name, data in items:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()
