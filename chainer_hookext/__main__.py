"""``python -m chainer_hookext``: see :mod:`chainer_hookext.profile.command`.
"""

import sys

from chainer_hookext.profile import command

if __name__ == '__main__':
    sys.exit(command.main())
