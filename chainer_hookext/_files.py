"""Files written whole or not at all."""

import os


def write_atomic(path, data):
    """Writes ``data`` (bytes) to ``path``: beside it first, then renamed
    over it, so that a reader never sees part of the file.

    The folder is made when missing; the file beside is removed when
    writing fails.
    """
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    aside = '{}.{}.tmp'.format(path, os.getpid())
    try:
        with open(aside, 'wb') as f:
            f.write(data)
        os.replace(aside, path)
    finally:
        if os.path.exists(aside):
            os.remove(aside)
