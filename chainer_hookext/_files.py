"""Files written whole or not at all, never through a planted link
(:func:`write_atomic`; docs/profile.md).
"""

import os
import secrets

#: Exclusive creation of a new file to write (binary on Windows).
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_BINARY', 0)
#: A new file's mode before the umask, as ``open(path, 'wb')`` gives.
_MODE = 0o666
#: Names tried before giving up, as :func:`tempfile.mkstemp` does.
_TRIES = 100


def write_atomic(path: str, data: bytes) -> None:
    """Writes ``data`` to ``path``: beside it first, then renamed over it,
    so that a reader never sees part of the file.

    The file beside is hidden (``.<name>.<random>.tmp``) and created
    exclusively, with the mode of a new file under the process's umask
    (``0o644`` under the usual ``022``), as Chainer's snapshot writers
    leave theirs.  The folder is made when missing.  When writing or
    renaming fails, the file beside is removed and ``path`` is left as it
    was.

    Args:
        path (str): The file to write.
        data (bytes): Its whole content.

    >>> import os, tempfile
    >>> out = tempfile.mkdtemp()
    >>> write_atomic(os.path.join(out, 'a.txt'), b'hello')
    >>> os.listdir(out)
    ['a.txt']
    """
    folder, name = os.path.split(path)
    os.makedirs(folder or '.', exist_ok=True)
    fd, aside = _create_beside(folder, name)
    try:
        with open(fd, 'wb') as f:
            f.write(data)
        os.replace(aside, path)
    except BaseException:
        os.remove(aside)
        raise


def _create_beside(folder, name):
    # Returns (fd, path) of a new file in ``folder``, made by this call.
    for _ in range(_TRIES):
        aside = os.path.join(folder, f'.{name}.{secrets.token_hex(6)}.tmp')
        try:
            return os.open(aside, _FLAGS, _MODE), aside
        except FileExistsError:
            continue
    raise FileExistsError(
        f'write_atomic: no free name for a file beside {name!r} in '
        f'{folder!r} after {_TRIES} tries')
