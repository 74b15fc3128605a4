"""Running statistics of CuPy arrays (:mod:`._running_statistics`'s
device side): a float64 state per key, one launch per array, no sync (the
last block merges the partial rows); a key's first launch sets the shift.
"""

import numpy

from chainer.backends import cuda

#: Threads per block, and blocks at most (the last block merges one
#: partial row per thread).
BLOCK = 256
MAX_BLOCKS = 256
#: Elements per thread before a second block is launched.
PER_THREAD = 4
#: The state: the row (``ROW`` floats: sum, squares, min, max, zeros,
#: norms, shift), one partial row of 6 per block, then the blocks' counter.
ROW = 7
STATE = 8 + 6 * MAX_BLOCKS + 1


def _kernel_source(name, ctype, load):
    return rf'''
extern "C" __global__ void statistics_{name}(
        const {ctype}* x, long long n, double* state, int first) {{
    __shared__ Part shared[BLOCK];
    __shared__ bool last;
    const double shift = first ? 0.0 : state[6];
    Part p = identity();
    for (long long i = (long long)blockIdx.x * BLOCK + threadIdx.x; i < n;
            i += (long long)gridDim.x * BLOCK) {{
        add(p, {load}, shift);
    }}
    end_block(p, shared, &last, state, first, n);
}}
'''


#: The CUDA source: one kernel per floating-point dtype, no header needed.
SOURCE = rf'''
#define BLOCK {BLOCK}
#define MAX_BLOCKS {MAX_BLOCKS}

struct Part {{ double sum, squares, lo, hi, zeros, x2; }};

__device__ __forceinline__ double lower(double a, double b) {{
    return (a < b || a != a) ? a : b;  // NaN wins, as in numpy.min
}}

__device__ __forceinline__ double upper(double a, double b) {{
    return (a > b || a != a) ? a : b;
}}

__device__ __forceinline__ Part identity() {{
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    Part p = {{0.0, 0.0, inf, -inf, 0.0, 0.0}};
    return p;
}}

__device__ __forceinline__ void add(Part& p, double v, double shift) {{
    const double d = v - shift;
    p.sum += d;
    p.squares += d * d;
    p.lo = lower(p.lo, v);
    p.hi = upper(p.hi, v);
    p.zeros += (v == 0.0);
    p.x2 += v * v;
}}

__device__ __forceinline__ void merge(Part& a, const Part& b) {{
    a.sum += b.sum;
    a.squares += b.squares;
    a.lo = lower(a.lo, b.lo);
    a.hi = upper(a.hi, b.hi);
    a.zeros += b.zeros;
    a.x2 += b.x2;
}}

__device__ __forceinline__ double from_half(unsigned short h) {{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return (double)f;
}}

__device__ Part reduce_block(Part p, Part* shared) {{
    shared[threadIdx.x] = p;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) {{
            merge(shared[threadIdx.x], shared[threadIdx.x + s]);
        }}
        __syncthreads();
    }}
    return shared[0];
}}

// Each block writes its partial row; the last block to end merges them
// into the state's row (or, for a key's first array, sets the shift).
__device__ void end_block(Part p, Part* shared, bool* last, double* state,
                          int first, long long n) {{
    p = reduce_block(p, shared);
    volatile double* parts = state + 8;
    unsigned int* counter = (unsigned int*)(state + 8 + 6 * MAX_BLOCKS);
    if (threadIdx.x == 0) {{
        volatile double* mine = parts + 6 * blockIdx.x;
        mine[0] = p.sum; mine[1] = p.squares; mine[2] = p.lo;
        mine[3] = p.hi; mine[4] = p.zeros; mine[5] = p.x2;
        __threadfence();
        *last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }}
    __syncthreads();
    if (!*last) {{
        return;
    }}
    Part q = identity();
    if (threadIdx.x < gridDim.x) {{
        volatile double* theirs = parts + 6 * threadIdx.x;
        Part t = {{theirs[0], theirs[1], theirs[2], theirs[3], theirs[4],
                  theirs[5]}};
        q = t;
    }}
    q = reduce_block(q, shared);
    if (threadIdx.x == 0) {{
        if (first) {{
            const Part empty = identity();
            state[0] = 0.0; state[1] = 0.0; state[2] = empty.lo;
            state[3] = empty.hi; state[4] = 0.0; state[5] = 0.0;
            state[6] = q.sum / (double)n;
        }} else {{
            state[0] += q.sum;
            state[1] += q.squares;
            state[2] = lower(state[2], q.lo);
            state[3] = upper(state[3], q.hi);
            state[4] += q.zeros;
            state[5] += sqrt(q.x2);
        }}
        *counter = 0u;
    }}
}}
''' + ''.join(
    _kernel_source(name, ctype, load) for name, ctype, load in (
        ('float16', 'unsigned short', 'from_half(x[i])'),
        ('float32', 'float', '(double)x[i]'),
        ('float64', 'double', 'x[i]')))

_module = None  # compiled once per device, at its first array
_kernels = {}  # {(device id, dtype name): the kernel}


def _kernel(device, dtype):
    global _module
    kernel = _kernels.get((device.id, dtype.name))
    if kernel is None:
        if _module is None:
            _module = cuda.cupy.RawModule(code=SOURCE)
        with device:
            kernel = _kernels[device.id, dtype.name] = _module.get_function(
                f'statistics_{dtype.name}')
    return kernel


class DeviceRunning:
    """Running values of one key of CuPy arrays."""

    __slots__ = ('count', 'calls', 'state')

    def __init__(self, array):
        if not isinstance(array, cuda.ndarray):
            raise TypeError(
                f'running statistics of a {type(array).__name__!r}: only '
                'NumPy and CuPy arrays are supported.')
        with array.device:
            self.state = cuda.cupy.zeros(STATE, numpy.float64)
        self.count = 0
        self.calls = 0
        _launch(array, self.state, 1)

    def add(self, array):
        """Adds ``array`` (non-empty, floating point, on the device)."""
        self.count += array.size
        self.calls += 1
        _launch(array, self.state, 0)

    def row(self):
        """The row and the shift (``Row``'s order), on the device."""
        return self.state[:ROW]


def _launch(array, state, first):
    if not array.flags.c_contiguous:
        array = cuda.cupy.ascontiguousarray(array)
    n = array.size
    blocks = min(MAX_BLOCKS, -(-n // (BLOCK * PER_THREAD)))
    device = array.device
    with device:
        _kernel(device, array.dtype)((blocks,), (BLOCK,), (
            array, numpy.int64(n), state, numpy.int32(first)))
