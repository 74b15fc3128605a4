"""Live bytes of the CuPy memory pool and their peaks over nested windows,
fed by CuPy's memory hook (no device sync).
"""

from chainer.backends import cuda


class LivePeaks:
    """Live bytes and the peaks of nested windows over them.

    >>> peaks = LivePeaks()
    >>> peaks.open()
    >>> peaks.allocated(100); peaks.open(); peaks.allocated(50)
    >>> peaks.freed(50); peaks.close()  # the inner window: 50 above its start
    50
    >>> peaks.freed(100); peaks.close()  # the outer one: 150 above its start
    150
    """

    def __init__(self):
        self.live = 0
        self._windows = []  # [start, peak] of the open windows, innermost last

    def allocated(self, size):
        self.live += size
        if self._windows:
            window = self._windows[-1]
            if self.live > window[1]:
                window[1] = self.live

    def freed(self, size):
        self.live -= size

    def open(self):
        self._windows.append([self.live, self.live])

    def close(self):
        """Closes the innermost window; returns its peak above its start."""
        start, peak = self._windows.pop()
        if self._windows and peak > self._windows[-1][1]:
            self._windows[-1][1] = peak
        return peak - start

    def close_all(self):
        while self._windows:
            self.close()

    @property
    def depth(self):
        """The number of open windows."""
        return len(self._windows)


def on_gpu(links):
    """Whether a parameter of ``links`` is a CuPy array."""
    return bool(cuda.available) and any(
        isinstance(param.array, cuda.ndarray) for link in links
        for param in link.params(include_uninit=False))


def new_pool_hook(peaks, name='chainer_hookext.LinkMemory'):
    """Returns a CuPy memory hook named ``name`` feeding ``peaks`` (its
    ``allocated`` and ``freed``), or ``None``."""
    if not cuda.available:
        return None
    from cupy.cuda import memory_hook

    class PoolHook(memory_hook.MemoryHook):
        def malloc_postprocess(self, device_id, size, mem_size, mem_ptr,
                               pmem_id):
            peaks.allocated(mem_size)

        def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
            peaks.freed(mem_size)

    PoolHook.name = name
    return PoolHook()
