import os

import setuptools


here = os.path.abspath(os.path.dirname(__file__))
version = {}
with open(os.path.join(here, 'chainer_hookext', '_version.py')) as f:
    exec(f.read(), version)

setuptools.setup(version=version['__version__'])
