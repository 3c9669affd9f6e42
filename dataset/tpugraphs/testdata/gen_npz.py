# Regenerates the npz fixtures of this directory with NumPy (Debian's python3-numpy 1.24):
#   /usr/bin/python3 gen_npz.py
# The Go tests pin the values written here; they never run this script.
import numpy as np

# Every dtype, C order, little endian, stored (np.savez).
base = np.arange(6).reshape(2, 3)
dt = {
    "b1": (base % 2).astype("|b1"),
    "i1": (base - 3).astype("<i1"), "i2": (base - 3).astype("<i2"),
    "i4": (base - 3).astype("<i4"), "i8": (base - 3).astype("<i8"),
    "u1": base.astype("|u1"), "u2": base.astype("<u2"),
    "u4": base.astype("<u4"), "u8": base.astype("<u8"),
    "f4": (base + 0.5).astype("<f4"), "f8": (base + 0.25).astype("<f8"),
}
np.savez("dtypes.npz", **dt)
# The same values in Fortran order and big endian, deflated (np.savez_compressed), plus
# a 3-D Fortran array and a 1-D one.
fb = {k: np.asfortranarray(v.astype(v.dtype.newbyteorder(">"))) for k, v in dt.items()}
fb["f3d"] = np.asfortranarray(np.arange(24, dtype="<i2").reshape(2, 3, 4))
fb["v1d"] = np.arange(5, dtype=">f8")
np.savez_compressed("fortran_be.npz", **fb)

# A tile-collection file shaped like the released ones (dtypes as in a real file).
n, m, c = 5, 4, 3
np.savez_compressed(
    "tile_small.npz",
    node_feat=(np.arange(n * 140, dtype=np.float32).reshape(n, 140) / 10),
    node_opcode=np.array([1, 63, 24, 24, 88], dtype=np.uint8),
    edge_index=np.asfortranarray(np.array([[1, 0], [2, 1], [3, 1], [4, 2]], dtype=np.int64)),
    config_feat=(np.arange(c * 24, dtype=np.float32).reshape(c, 24) % 7),
    config_runtime=np.array([1000, 2500, 1750], dtype=np.int64),
    config_runtime_normalizers=np.array([1000, 1000, 1000], dtype=np.int64),
)
# A layout-collection file: 2 configurable nodes (1 and 3), 3 configs, -1 padding.
ncf = np.full((c, 2, 18), -1, dtype=np.float32)
for i in range(c):
    ncf[i, 0, :6] = [i, 0, 1, 2, 3, 4]
    ncf[i, 1, :6] = [5, 4, 3, 2, 1, i]
np.savez(
    "layout_small.npz",
    node_feat=np.ones((n, 140), dtype=np.float32),
    node_opcode=np.array([1, 26, 1, 63, 24], dtype=np.uint8),
    edge_index=np.array([[1, 0], [3, 1], [3, 2], [4, 3]], dtype=np.int32),
    node_config_ids=np.array([1, 3], dtype=np.int16),
    node_config_feat=ncf,
    config_runtime=np.array([300, 200, 100], dtype=np.int64),
    node_splits=np.array([[0, 5]], dtype=np.int64),
)
