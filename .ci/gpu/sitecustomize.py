"""Lets Chainer 7.8.1 import under NumPy 2 (the GPU check's image ships
NumPy 2 with its CuPy); imported by Python at start-up from PYTHONPATH.

Chainer reads ``numpy.sctypes`` (removed in NumPy 2.0:
``chainer/functions/array/as_strided.py``) and imports
``numpy.distutils.system_info`` (removed for Python 3.12:
``chainer/_environment_check.py``, which calls it on macOS only).  Under
NumPy 1 this file does nothing.
"""

import sys
import types

import numpy

if not hasattr(numpy, 'sctypes'):
    numpy.sctypes = {
        'int': [numpy.int8, numpy.int16, numpy.int32, numpy.int64],
        'uint': [numpy.uint8, numpy.uint16, numpy.uint32, numpy.uint64],
        'float': [numpy.float16, numpy.float32, numpy.float64],
        'complex': [numpy.complex64, numpy.complex128],
        'others': [bool, object, bytes, str, numpy.void],
    }
    try:
        import numpy.distutils.system_info  # noqa: F401
    except ImportError:
        distutils = types.ModuleType('numpy.distutils')
        system_info = types.ModuleType('numpy.distutils.system_info')
        system_info.get_info = lambda name, notfound_action=0: {}
        distutils.system_info = system_info
        sys.modules['numpy.distutils'] = distutils
        sys.modules['numpy.distutils.system_info'] = system_info
