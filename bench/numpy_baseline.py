# NumPy over a memory map: the same statistics per moment, as a Python user would write them.
# Usage: numpy_baseline.py FILE START ELEMENTS_PER_MOMENT MOMENTS
import json, sys, time
import numpy as np

path, start, per, moments = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = time.perf_counter()
total = 0
for k in range(moments):
    # each entry: a 24-byte header, then m and v
    entry = k // 2
    offset = start + entry * (24 + 8 * per) + 24 + (k % 2) * 4 * per
    x = np.memmap(path, dtype='<f4', mode='r', offset=offset, shape=(per,))
    finite = np.isfinite(x)
    nan = int(np.isnan(x).sum())
    inf = int(per - finite.sum() - nan)
    xf = x[finite]
    lo, hi = float(xf.min()), float(xf.max())
    mean = float(xf.mean(dtype=np.float64))
    rms = float(np.sqrt(np.mean(np.square(xf, dtype=np.float64))))
    zero = int((x == 0).sum())
    neg = int((x < 0).sum())
    nz = xf[xf != 0]
    hist = np.bincount(np.frexp(nz)[1].astype(np.int64) + 200)
    total += per
print(json.dumps({"seconds": time.perf_counter() - t0, "elements": total}))
