"""Files written whole or not at all, never through a planted link
(docs/profile.md, "Shared result folders").
"""

import os
import secrets

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_BINARY', 0)
_MODE = 0o666  # as open(path, 'wb'): 0o644 under the usual umask
_TRIES = 100


def write_atomic(path: str, data: bytes) -> None:
    """Writes ``data`` to a new hidden file beside ``path``, then renames
    it over ``path`` (the folder made when missing); on failure ``path``
    is left as it was.

    >>> import os, tempfile
    >>> out = tempfile.mkdtemp()
    >>> write_atomic(os.path.join(out, 'a.txt'), b'hello')
    >>> os.listdir(out)
    ['a.txt']
    """
    folder, name = os.path.split(path)
    os.makedirs(folder or '.', exist_ok=True)
    for _ in range(_TRIES):
        aside = os.path.join(folder, f'.{name}.{secrets.token_hex(6)}.tmp')
        try:
            fd = os.open(aside, _FLAGS, _MODE)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(
            f'write_atomic: no free name for a file beside {name!r} in '
            f'{folder!r} after {_TRIES} tries')
    try:
        with open(fd, 'wb') as f:
            f.write(data)
        os.replace(aside, path)
    except BaseException:
        os.remove(aside)
        raise
